#!/usr/bin/env bash
# TEI's and OpenAI's routes of `roberta serve` with curl. Usage: bash curl.sh [URL]
# (default http://127.0.0.1:8080, e.g. after `./build/roberta serve --model models/demo`).
set -euo pipefail
url=${1:-http://127.0.0.1:8080}
post() { curl -sS --fail-with-body "$url$1" -H 'Content-Type: application/json' -d "$2"; echo; }

post /embed '{"inputs": ["The cat sat on the mat.", "A dog slept."]}' | cut -c1-60   # TEI: [[float]]
post /v1/embeddings '{"input": "The cat sat on the mat.", "model": "demo"}' | grep -o '"usage":.*'
post /similarity '{"inputs": {"source_sentence": "A cat sat.", "sentences": ["A cat was sitting.", "Stocks fell."]}}'
post /fill_mask '{"inputs": "She opened the <mask> and looked out.", "top_k": 2}'
post /tokenize '{"inputs": "Hello world", "add_special_tokens": false}'
