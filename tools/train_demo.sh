#!/usr/bin/env bash
# Trains the demo model (models/demo) from nothing, as its model card describes, and scores it on the
# held-out text with PyTorch and with the engine (the same masks). Each step is skipped when its output
# exists, and training resumes from its last checkpoint (written every 10 minutes), so running the
# script again after an interruption continues where it stopped. About 95 minutes on 2 cores.
# Usage: bash tools/train_demo.sh WORK_DIR OUT_DIR [CORPUS_DIR]
set -euo pipefail
if (($# < 2)); then
  echo "usage: bash tools/train_demo.sh WORK_DIR OUT_DIR [CORPUS_DIR]" >&2
  exit 2
fi
work=$1
out=$2
tools=$(cd "$(dirname "$0")" && pwd)
corpus=${3:-$tools/../../shared/assets/corpus}
roberta=$tools/../build/roberta
py=/usr/bin/python3
train_demo=$tools/train_demo.py

[[ -f $work/train-sentence-starts.npy ]] || "$py" "$train_demo" prepare --corpus "$corpus" --work "$work"
if [[ ! -f $out/model.safetensors ]]; then
  resume=()
  [[ -f $work/checkpoint.pt ]] && resume=(--resume)
  "$py" "$train_demo" train --work "$work" "${resume[@]}"
  "$py" "$train_demo" export --work "$work" --out "$out"
fi
echo "held-out masked-LM accuracy, PyTorch:"
"$py" "$train_demo" eval --model "$out" --work "$work" --masks-out "$work/heldout-masks.jsonl"
if [[ -x $roberta ]]; then
  echo "the same masks, roberta.cpp:"
  "$roberta" eval-mlm --model "$out" --masks "$work/heldout-masks.jsonl"
fi
