#!/usr/bin/env bash
# SentencePiece (Unigram) tokenizer throughput, roberta.cpp against Hugging Face's Rust tokenizer,
# through tools/bench_tokenizer.sh: the XLM-RoBERTa-style test tokenizer (tests/data/hf/unigram:
# Precompiled nmt_nfkc, Strip, Replace, Metaspace, 2,002 pieces trained on the shared corpus).
# Usage: bash tools/bench_unigram_tokenizer.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/bench_tokenizer.sh "${1:-build}" "${2:-2}" tests/data/hf/unigram
