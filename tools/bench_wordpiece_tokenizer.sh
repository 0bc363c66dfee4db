#!/usr/bin/env bash
# WordPiece tokenizer throughput, roberta.cpp against Hugging Face's Rust tokenizer: the uncased
# BERT-style tokenizer HF's trainer made from the shared corpus (tests/data/hf/wordpiece_corpus,
# 30,005 tokens) through tools/bench_tokenizer.sh, as it is (BertNormalizer lowercase, so
# strip_accents too) and with lowercase false (the cased normalizer on the same vocabulary).
# Usage: bash tools/bench_wordpiece_tokenizer.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-2}
tok=tests/data/hf/wordpiece_corpus
cased=$(mktemp -d)
trap 'rm -rf "$cased"' EXIT
/usr/bin/python3 -c "import json, sys; d = json.load(open(sys.argv[1])); d['normalizer']['lowercase'] = False
json.dump(d, open(sys.argv[2], 'w'), ensure_ascii=False)" "$tok/tokenizer.json" "$cased/tokenizer.json"
echo "== uncased (lowercase, strip_accents)"
bash tools/bench_tokenizer.sh "$build" "$rounds" "$tok"
echo "== cased (lowercase false)"
bash tools/bench_tokenizer.sh "$build" "$rounds" "$cased"
