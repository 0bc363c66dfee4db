#!/usr/bin/env bash
# Benchmark of `roberta serve` (not a test): p50/p99 latency and tokens/s at 1, 8 and 64 concurrent
# clients sending one sentence each, on loopback, against a roberta-base-shaped model.
#   bash tools/bench_serve.sh [BUILD_DIR] [MODEL_DIR] [SECONDS]
# Defaults: build, /tmp/roberta-bench/base (made here if missing), 20 s per concurrency.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build} model=${2:-/tmp/roberta-bench/base} seconds=${3:-20}
if [ ! -f "$model/model.safetensors" ]; then
  /usr/bin/python3 tools/make_test_model.py --out "$model" --preset base --seed 0 --no-lm-head
fi
lscpu | grep -E '^Model name' || true
exec /usr/bin/python3 tools/bench_serve.py "$build/roberta" "$model" --seconds "$seconds" --concurrency "${CONCURRENCY:-1,8,64}"
