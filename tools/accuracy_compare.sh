#!/usr/bin/env bash
# How close each engine's lower precisions come to PyTorch fp32 on the same masked inputs:
# roberta.cpp fp32 / bf16 / int8, ONNX Runtime fp32 and int8 (the plain export and its dynamic
# quantization per channel, as tools/bench_compare.sh runs them), PyTorch bf16 and int8 (its
# quantize_dynamic, per tensor and per channel). tools/accuracy_compare.py says what is compared.
# Usage: bash tools/accuracy_compare.sh [MODEL_DIR] [MAX_SEQUENCES] [THREADS]
#   MODEL_DIR (default models/demo) must have a masked-LM head; its masked inputs are made as
#   tests/demo/run_heldout_agreement.sh makes them (tools/train_demo.py eval --masks-out on the
#   shared corpus's held-out text: at most MAX_SEQUENCES sequences, default all of them: the demo
#   model's 844, 15,946 masks, in about 3 minutes). Needs the Python package built in build/python
#   (a normal build does it). Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
model=$(realpath "${1:-models/demo}")  # (relative to the repository, as the other tools/ scripts)
sequences=${2:-1000000}
threads=${3:-2}
py=/usr/bin/python3
scratch=${TMPDIR:-/tmp}/roberta-bench
# (absolute: the Python step below runs in tools/)
ROBERTA_SHARED_DIR=$(realpath "${ROBERTA_SHARED_DIR:-../shared}")
export ROBERTA_SHARED_DIR
shared=$ROBERTA_SHARED_DIR/bench
[ -d build/python/roberta_cpp ] ||
  { echo "accuracy_compare.sh: build/python/roberta_cpp is missing: build first" >&2; exit 2; }
(cd tools && "$py" accuracy_compare.py --check "$model")  # a config.json and a masked-LM head
mkdir -p "$scratch"
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
# shellcheck source=tools/ort_setup.sh
source tools/ort_setup.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" tools/train_demo.py eval --model "$model" --corpus "$ROBERTA_SHARED_DIR/assets/corpus" \
  --masks-out "$work/masks.jsonl" --max-sequences "$sequences" > /dev/null
node tools/ort_hidden.js "$onnx/plain.onnx" "$threads" "$work/masks.jsonl" "$work/ort-fp32.f32"
node tools/ort_hidden.js "$onnx/plain-int8.onnx" "$threads" "$work/masks.jsonl" "$work/ort-int8.f32"
(cd tools && PYTHONPATH="$PWD/../build/python${PYTHONPATH:+:$PYTHONPATH}" OMP_WAIT_POLICY=PASSIVE \
  "$py" accuracy_compare.py "$model" "$work/masks.jsonl" "$threads" \
  "ONNX Runtime fp32=$work/ort-fp32.f32" "ONNX Runtime int8 (per channel)=$work/ort-int8.f32")
