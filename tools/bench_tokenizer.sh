#!/usr/bin/env bash
# Tokenizer throughput, roberta.cpp against Hugging Face's Rust tokenizer (npm `tokenizers`,
# installed into a scratch folder by bench_hf_tokenizer.sh), interleaved in one run on the whole
# corpus, every line encoded on its own without special tokens.
# Usage: bash tools/bench_tokenizer.sh [BUILD_DIR] [ROUNDS] [TOKENIZER_DIR]
# (TOKENIZER_DIR: a folder with a tokenizer.json; default roberta-base's from ../shared/assets)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-2}
corpus=$(cd ../shared/assets/corpus && pwd)
tok=$(cd "${3:-../shared/assets/roberta-base-tokenizer}" && pwd)
out=$(mktemp -d)
for r in $(seq "$rounds"); do
  "$build/roberta-tokenizer-bench" --model "$tok" --threads 2 "$corpus"/fiction.txt "$corpus"/nonfiction.txt \
    "$corpus"/drama-poetry.txt | tail -n 1 > "$out/ours-$r.json"
  bash tools/bench_hf_tokenizer.sh --tokenizer "$tok/tokenizer.json" --modes batch_nopar,batch_multi 2> /dev/null |
    tail -n 1 > "$out/hf-$r.json"
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
ours = [json.load(open(f"{out}/ours-{r}.json")) for r in range(1, rounds + 1)]
hf = [json.load(open(f"{out}/hf-{r}.json")) for r in range(1, rounds + 1)]
med = lambda xs: statistics.median(xs)
rows = [
    ("roberta.cpp encode, 1 thread", med([o["encode, 1 thread"]["tokens_per_s"] for o in ours])),
    ("roberta.cpp encode_ids, 1 thread", med([o["encode_ids, 1 thread"]["tokens_per_s"] for o in ours])),
    ("roberta.cpp encode_batch, 2 threads", med([o["encode_batch, 2 threads"]["tokens_per_s"] for o in ours])),
    ("HF encodeBatch, 1 thread", med([h["modes"]["batch_nopar"]["total"]["tokens_per_s"] for h in hf])),
    ("HF encodeBatch, 2 threads", med([h["modes"]["batch_multi"]["total"]["tokens_per_s"] for h in hf])),
]
tokens = ours[0]["encode, 1 thread"]["tokens"]
print(f"{f'tokenizer (whole corpus, {tokens / 1e6:.1f}M tokens)':40} {'tokens/s':>12}")
for name, v in rows:
    print(f"{name:40} {v:12,.0f}")
print(f"single-threaded ratio (encode / HF 1 thread): {rows[0][1] / rows[3][1]:.1f}x")
print(f"multi-threaded ratio (encode_batch / HF 2 threads): {rows[2][1] / rows[4][1]:.1f}x")
PY
rm -rf "$out"
