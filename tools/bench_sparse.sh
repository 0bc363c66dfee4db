#!/usr/bin/env bash
# Sparse (SPLADE) embeddings against the MLM logits kept whole, interleaved: `roberta bench
# --outputs hidden` (the encoder alone), `logits` (every token's logits, T x vocabulary floats) and
# `sparse` (SparseEncoder::run: the logits reduced chunk by chunk, then the non-zero weights), in
# rounds, one process each (so that each peak memory is its own). Prints: shape, outputs, round,
# median ms of 5 runs, peak RSS in MB. docs/performance.md#sparse-embeddings.
# Usage: bash tools/bench_sparse.sh ROBERTA_BINARY MODEL_DIR [ROUNDS]
#   (a roberta-base-shaped model: /usr/bin/python3 tools/make_test_model.py --out DIR --preset base --seed 5 --st-splade max)
set -euo pipefail
bin=$1 model=$2 rounds=${3:-3}
for shape in "--batch 8 --seq 128" "--batch 32 --lengths uniform:8:128"; do
  for r in $(seq "$rounds"); do
    for out in hidden logits sparse; do
      # shellcheck disable=SC2086
      "$bin" bench --model "$model" --dtype fp32 $shape --runs 5 --outputs $out --json |
        python3 -c "import json,sys; j=json.load(sys.stdin); print('$shape', '$out', $r, round(j['median_ms'],1), round(j['peak_rss_mb']))"
    done
  done
done
