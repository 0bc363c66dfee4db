#!/usr/bin/env bash
# Sparse (SPLADE) embeddings: `roberta embed --sparse` against the PyTorch reference
# (tools/dump_reference.py: the model's MLM logits, then sentence-transformers 5's
# SpladePooling.forward transcribed in roberta_ref/reference.py, or TEI's splade pooling for a
# folder without SpladePooling): max and sum, relu and log1p_relu, a prompt, whitespace stripped,
# --max-active-dims, batch composition. A negative control must fail.
# Usage: run_sparse_parity.sh ROBERTA_BINARY WORK_DIR
set -euo pipefail
roberta=$(realpath "$1")
work=$2
here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/../../tools" && pwd)
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"

{
  echo "The weather is lovely today."
  echo "  It is sunny outside, and the children are playing in the park. "
  echo "A"
  echo "query: what is the capital of France?"
} > "$work/texts.txt"

# Our JSON lines against the reference's dense [B, V] weights: every weight within 1e-5 of the
# vector's largest weight (the logits' own fp32 rounding, scaled by log1p's slope), and the same
# non-zero entries except where the reference's weight is below that tolerance (a logit next to 0
# falls on either side of relu). K > 0: the reference keeps its K largest weights first
# (sentence-transformers' select_max_active_dims). Exit 1 otherwise.
compare() {  # REF.npy MINE.jsonl NAME [K]
  "$py" - "$@" <<'PY'
import json, sys
import numpy as np
ref = np.load(sys.argv[1]).astype(np.float64)
name, k = sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 0
rows = [json.loads(l) for l in open(sys.argv[2])]
if k:
    for r in ref:
        r[np.argsort(-np.abs(r), kind="stable")[k:]] = 0
mine = np.zeros_like(ref)
ok = len(rows) == len(ref)
for b, row in enumerate(rows[:len(ref)]):
    idx = [e["index"] for e in row]
    ok &= idx == sorted(set(idx)) and all(e["value"] > 0 for e in row) and (not k or len(idx) <= k)
    mine[b, idx] = [e["value"] for e in row]
tol = 1e-5 * np.maximum(1.0, np.abs(ref).max(1, keepdims=True))
diff = np.abs(ref - mine)
support = ((ref != 0) != (mine != 0)) & (np.abs(ref) >= tol)
ok &= bool((diff <= tol).all()) and not support.any()
print(f"  {name:<28} {ref.shape} non-zero {[int(n) for n in (ref != 0).sum(1)]} "
      f"max abs diff {diff.max():.2e} (tol {tol.max():.1e}){' support differs' if support.any() else ''}")
sys.exit(0 if ok else 1)
PY
}

failed=()
check() {  # NAME "MAKE_OPTIONS" "DUMP_OPTIONS" EMBED_OPTIONS...
  local name=$1 make=$2 dump=$3
  shift 3
  # shellcheck disable=SC2086
  "$py" "$tools/make_test_model.py" --out "$work/$name" --preset tiny --seed 47 $make > /dev/null
  # shellcheck disable=SC2086
  "$py" "$tools/dump_reference.py" --model "$work/$name" --text-file "$work/texts.txt" --strip $dump \
    --out "$work/$name-dump" > /dev/null
  "$roberta" embed --sparse --dtype fp32 --model "$work/$name" "$@" < "$work/texts.txt" > "$work/$name.jsonl"
  local options=" $* " k=0
  [[ $options == *" --max-active-dims "* ]] && k=${options##*--max-active-dims } && k=${k%% *}
  compare "$work/$name-dump/sparse_embedding.npy" "$work/$name.jsonl" "$name" "$k" || failed+=("$name")
}

check max-relu "--st-splade max" ""
check sum-relu "--st-splade sum" ""
check max-log1p-relu "--st-splade max:log1p_relu" ""
check sum-log1p-relu "--st-splade sum:log1p_relu" ""
check plain-mlm "" "--splade"
check top-k "--st-splade max" "" --max-active-dims 7
# sentence-transformers' SparseEncoder pools the prompt's tokens too (SpladePooling has no
# include_prompt): the reference runs on prompt + text.
name=prompt
"$py" "$tools/make_test_model.py" --out "$work/$name" --preset tiny --seed 47 --st-splade max \
  --st-prompts '{"query": "query: "}' > /dev/null
"$py" "$tools/dump_reference.py" --model "$work/$name" --text-file "$work/texts.txt" --strip --prompt "query: " \
  --out "$work/$name-dump" > /dev/null
"$roberta" embed --sparse --dtype fp32 --model "$work/$name" --prompt-name query < "$work/texts.txt" > "$work/$name.jsonl"
compare "$work/$name-dump/sparse_embedding.npy" "$work/$name.jsonl" "$name" || failed+=("$name")

# Batch composition: each text alone gives the same bytes as the texts together.
"$roberta" embed --sparse --dtype fp32 --model "$work/max-relu" --batch-size 1 < "$work/texts.txt" > "$work/alone.jsonl"
if cmp -s "$work/alone.jsonl" "$work/max-relu.jsonl"; then
  echo "  batch-size 1 gives the same bytes"
else
  failed+=("batch composition changes the output")
fi

# Negative control: a max folder's output against the sum reference must fail.
echo "negative control (must fail):"
if compare "$work/sum-relu-dump/sparse_embedding.npy" "$work/max-relu.jsonl" "max against sum"; then
  failed+=("negative control passed")
fi

if ((${#failed[@]})); then
  printf 'FAIL: %s\n' "${failed[@]}"
  exit 1
fi
echo "all sparse cases within tolerance"
