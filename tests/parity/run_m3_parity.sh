#!/usr/bin/env bash
# bge-m3's three outputs: `roberta embed --bge-m3` against the PyTorch reference (tools/dump_reference.py
# --m3: the reference's last hidden state through a transcription of FlagEmbedding's M3 code,
# roberta_ref/m3.py), on a random-weight XLM-RoBERTa with random ColBERT and sparse heads
# (colbert_linear.pt, sparse_linear.pt, converted by tools/convert_checkpoint.py): dense, lexical
# weights (ids and values) and ColBERT vectors (shapes and values) within 1e-5, --m3-outputs,
# --truncate-dim, truncation at --max-length, batch composition. A negative control must fail.
# Usage: run_m3_parity.sh ROBERTA_BINARY WORK_DIR
set -euo pipefail
roberta=$(realpath "$1")
work=$2
here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/../../tools" && pwd)
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
m=$work/m3

{
  echo "The weather is lovely today."
  echo "It is sunny outside, and the children are playing in the park, the park, the park."
  echo "A"
  echo "  spaces at both ends are kept, as FlagEmbedding's tokenizer call keeps them  "
} > "$work/texts.txt"

"$py" "$tools/make_test_model.py" --out "$m" --preset tiny --seed 51 --model-type xlm-roberta --m3-heads 24 \
  --st-pooling cls --st-normalize > /dev/null
"$py" "$tools/convert_checkpoint.py" "$m" > /dev/null

# Our JSON lines against the reference's m3.json: the same keys, the same lexical ids and ColBERT
# shapes, every value within 1e-5. Exit 1 otherwise.
compare() {  # REF.json MINE.jsonl NAME KEYS
  "$py" - "$@" <<'PY'
import json, sys
import numpy as np
ref = json.load(open(sys.argv[1]))
rows = [json.loads(l) for l in open(sys.argv[2])]
name, keys = sys.argv[3], sys.argv[4].split(",")
ok, diff = len(rows) == len(ref["dense_vecs"]), 0.0
for i, r in enumerate(rows):
    ok &= sorted(r) == sorted(keys)
    if "dense_vecs" in keys:
        a, b = np.float32(r["dense_vecs"]), np.float32(ref["dense_vecs"][i])
        ok &= a.shape == b.shape
        diff = max(diff, float(np.abs(a - b).max()) if a.shape == b.shape else np.inf)
    if "lexical_weights" in keys:
        a, b = r["lexical_weights"], ref["lexical_weights"][i]
        ok &= sorted(a) == sorted(b)
        diff = max([diff] + [abs(a[k] - b[k]) for k in a if k in b])
    if "colbert_vecs" in keys:
        a, b = np.float32(r["colbert_vecs"]), np.float32(ref["colbert_vecs"][i])
        ok &= a.shape == b.shape
        diff = max(diff, float(np.abs(a - b).max()) if a.shape == b.shape else np.inf)
ok &= diff <= 1e-5
lexical = [len(w) for w in ref["lexical_weights"]]
colbert = [np.shape(v) for v in ref["colbert_vecs"]]
print(f"  {name:<26} lexical ids {lexical} ColBERT {colbert} max abs diff {diff:.2e}")
sys.exit(0 if ok else 1)
PY
}

failed=()
all=dense_vecs,lexical_weights,colbert_vecs
"$py" "$tools/dump_reference.py" --model "$m" --text-file "$work/texts.txt" --out "$work/ref" --m3 --no-logits > /dev/null
"$roberta" embed --bge-m3 --dtype fp32 --model "$m" < "$work/texts.txt" > "$work/all.jsonl"
compare "$work/ref/m3.json" "$work/all.jsonl" "all three" "$all" || failed+=("all three")
"$roberta" embed --bge-m3 --m3-outputs sparse,colbert --dtype fp32 --model "$m" < "$work/texts.txt" > "$work/two.jsonl"
compare "$work/ref/m3.json" "$work/two.jsonl" "--m3-outputs sparse,colbert" lexical_weights,colbert_vecs ||
  failed+=("--m3-outputs")
"$py" "$tools/dump_reference.py" --model "$m" --text-file "$work/texts.txt" --out "$work/ref-dim" --m3 \
  --m3-truncate-dim 8 --no-logits > /dev/null
"$roberta" embed --bge-m3 --truncate-dim 8 --dtype fp32 --model "$m" < "$work/texts.txt" > "$work/dim.jsonl"
compare "$work/ref-dim/m3.json" "$work/dim.jsonl" "--truncate-dim 8" "$all" || failed+=("--truncate-dim")

# --max-length 12: the reference gets the ids cut as Hugging Face's tokenizer cuts them (the first
# 11 tokens, then </s>).
"$roberta" tokenize --model "$m" < "$work/texts.txt" |
  "$py" -c 'import json,sys; print(json.dumps([(i[:11] + [2]) if len(i) > 12 else i for i in (json.loads(l)["ids"] for l in sys.stdin)]))' \
  > "$work/cut-ids.json"
"$py" "$tools/dump_reference.py" --model "$m" --ids "$work/cut-ids.json" --out "$work/ref-cut" --m3 --no-logits > /dev/null
"$roberta" embed --bge-m3 --max-length 12 --dtype fp32 --model "$m" < "$work/texts.txt" > "$work/cut.jsonl" 2> "$work/cut.err"
compare "$work/ref-cut/m3.json" "$work/cut.jsonl" "--max-length 12" "$all" || failed+=("--max-length")
grep -q "line 2 was truncated" "$work/cut.err" || failed+=("no truncation warning for line 2")

# Batch composition: each text alone gives the same bytes.
"$roberta" embed --bge-m3 --batch-size 1 --dtype fp32 --model "$m" < "$work/texts.txt" > "$work/alone.jsonl"
if cmp -s "$work/alone.jsonl" "$work/all.jsonl"; then
  echo "  batch-size 1 gives the same bytes"
else
  failed+=("batch composition changes the output")
fi

echo "negative control (must fail):"
"$roberta" embed --bge-m3 --no-normalize --dtype fp32 --model "$m" < "$work/texts.txt" > "$work/raw.jsonl"
if compare "$work/ref/m3.json" "$work/raw.jsonl" "without normalising" "$all"; then
  failed+=("negative control passed")
fi

if ((${#failed[@]})); then
  printf 'FAIL: %s\n' "${failed[@]}"
  exit 1
fi
echo "all bge-m3 cases within 1e-5"
