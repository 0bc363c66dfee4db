#!/usr/bin/env bash
# Makes the models and PyTorch reference dumps the CLI tests use. Usage: make_fixtures.sh OUT_DIR
set -euo pipefail
out=$1
here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/../../tools" && pwd)
py=/usr/bin/python3
rm -rf "$out" && mkdir -p "$out"
"$py" "$tools/make_test_model.py" --out "$out/tiny" --preset tiny --seed 11 > /dev/null
"$py" "$tools/make_test_model.py" --out "$out/no-lm-head" --preset tiny --seed 12 --no-lm-head > /dev/null
"$py" "$tools/make_test_model.py" --out "$out/no-tokenizer" --preset tiny --seed 13 --no-tokenizer > /dev/null
"$py" "$tools/dump_reference.py" --model "$out/tiny" --text-file "$here/texts.txt" --out "$out/tiny-dump" > /dev/null
# Task heads for classify, zero-shot, rerank, ner and qa.
"$py" "$tools/make_test_model.py" --out "$out/sentiment" --preset tiny --seed 21 --head sequence --labels NEGATIVE,NEUTRAL,POSITIVE > /dev/null
"$py" "$tools/make_test_model.py" --out "$out/nli" --preset tiny --seed 22 --head sequence --labels contradiction,neutral,entailment > /dev/null
"$py" "$tools/make_test_model.py" --out "$out/reranker" --preset tiny --seed 23 --head sequence --num-labels 1 > /dev/null
"$py" "$tools/make_test_model.py" --out "$out/ner" --preset tiny --seed 24 --head token --labels O,B-PER,I-PER,B-LOC,I-LOC > /dev/null
"$py" "$tools/make_test_model.py" --out "$out/qa" --preset tiny --seed 25 --head qa > /dev/null
