#!/usr/bin/env bash
# bge-m3's three outputs from one pass against one pass per output, interleaved: `roberta bench
# --outputs m3` (dense, sparse and ColBERT from one forward pass) and `m3:dense`, `m3:sparse`,
# `m3:colbert` (one each: three passes cost their sum), with `hidden` (the encoder alone), in rounds,
# one process each. Prints: shape, outputs, round, median ms of 5 runs.
# docs/performance.md#bge-m3-one-pass-against-three.
# Usage: bash tools/bench_m3.sh ROBERTA_BINARY MODEL_DIR [ROUNDS]
#   (a roberta-base-shaped one: /usr/bin/python3 tools/make_test_model.py --out DIR --preset base --seed 6
#    --model-type xlm-roberta --m3-heads --no-lm-head --st-pooling cls --st-normalize, then
#    /usr/bin/python3 tools/convert_checkpoint.py DIR)
set -euo pipefail
bin=$1 model=$2 rounds=${3:-3}
for shape in "--batch 8 --seq 128" "--batch 32 --lengths uniform:8:128"; do
  for r in $(seq "$rounds"); do
    for out in hidden m3 m3:dense m3:sparse m3:colbert; do
      # shellcheck disable=SC2086
      "$bin" bench --model "$model" --dtype fp32 $shape --runs 5 --outputs $out --json |
        python3 -c "import json,sys; j=json.load(sys.stdin); print('$shape', '$out', $r, round(j['median_ms'],1))"
    done
  done
done
