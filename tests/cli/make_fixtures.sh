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
# tiny with one NaN weight in its last layer (intermediate.dense.weight[0][5]), and PyTorch's dump of it.
cp -r "$out/tiny" "$out/tiny-nan"
"$py" - "$out/tiny-nan" <<'PY'
import json, struct, sys
path = sys.argv[1] + "/model.safetensors"
data = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
layers = json.load(open(sys.argv[1] + "/config.json"))["num_hidden_layers"]
name = next(k for k in header if k.endswith(f"layer.{layers - 1}.intermediate.dense.weight"))
assert header[name]["dtype"] == "F32"
at = 8 + n + header[name]["data_offsets"][0] + 4 * 5
data[at:at + 4] = struct.pack("<f", float("nan"))
open(path, "wb").write(data)
PY
"$py" "$tools/dump_reference.py" --model "$out/tiny-nan" --text-file "$here/texts.txt" --out "$out/tiny-nan-dump" > /dev/null
# Task heads for classify, zero-shot, rerank, ner and qa.
"$py" "$tools/make_test_model.py" --out "$out/sentiment" --preset tiny --seed 21 --head sequence --labels NEGATIVE,NEUTRAL,POSITIVE > /dev/null
"$py" "$tools/make_test_model.py" --out "$out/nli" --preset tiny --seed 22 --head sequence --labels contradiction,neutral,entailment > /dev/null
"$py" "$tools/make_test_model.py" --out "$out/reranker" --preset tiny --seed 23 --head sequence --num-labels 1 > /dev/null
"$py" "$tools/make_test_model.py" --out "$out/ner" --preset tiny --seed 24 --head token --labels O,B-PER,I-PER,B-LOC,I-LOC > /dev/null
"$py" "$tools/make_test_model.py" --out "$out/qa" --preset tiny --seed 25 --head qa > /dev/null
"$py" "$tools/make_test_model.py" --out "$out/splade" --preset tiny --seed 26 --st-splade max \
  --st-prompts '{"query": "query: "}' > /dev/null
"$py" "$tools/make_test_model.py" --out "$out/bge-m3" --preset tiny --seed 27 --model-type xlm-roberta --m3-heads 20 \
  --st-pooling cls --st-normalize > /dev/null
cp -r "$out/bge-m3" "$out/bge-m3-unconverted"
"$py" "$tools/convert_checkpoint.py" "$out/bge-m3" > /dev/null
