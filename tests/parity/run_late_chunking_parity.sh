#!/usr/bin/env bash
# Late chunking: `roberta embed --late-chunking` against the PyTorch reference written from the spec
# (tools/late_chunking_reference.py, roberta_ref/late_chunking.py), on a random tiny model with a mean
# Pooling and a Normalize module, on the documents of tests/data/hf/late_chunking.jsonl (the reference
# takes their ids and offsets from there: Hugging Face's tokenizer). Windows of 40 tokens, so the long
# documents run in many windows. Cases: sentences with the default overlap, --overlap 0 and 20, token
# chunks of 16, sentences packed to 60 tokens, given spans (overlapping, unsorted, cutting a word and
# an emoji), a prompt, --max-length 512, --no-normalize, a folder with cls pooling and a Dense module.
# Spans, token and window counts must be equal, the embeddings within 1e-5. Batch composition
# (--batch-size 1, the documents reversed) must give the same bytes. A negative control (the
# reference with Jina AI's drop-overlap stitching) must fail, and bad inputs must be refused.
# Usage: run_late_chunking_parity.sh ROBERTA_BINARY WORK_DIR
set -euo pipefail
roberta=$(realpath "$1")
work=$2
here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/../../tools" && pwd)
goldens=$(cd "$here/../data/hf" && pwd)/late_chunking.jsonl
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
m=$work/model
"$py" "$tools/make_test_model.py" --out "$m" --preset tiny --seed 61 --st-pooling mean --st-normalize > /dev/null
"$py" "$tools/make_test_model.py" --out "$work/dense" --preset tiny --seed 62 --st-pooling cls --st-dense 24:tanh \
  --st-normalize > /dev/null

# The documents (JSON strings), the same reversed, and the given-spans objects.
"$py" - "$goldens" "$work" <<'PY'
import json, os, sys
docs = [r["text"] for r in map(json.loads, open(sys.argv[1], encoding="utf-8")) if "text" in r]
out = sys.argv[2]
def write(name, rows):
    with open(os.path.join(out, name), "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
write("docs.jsonl", docs)
write("reversed.jsonl", docs[::-1])
text = {t: t for t in docs}
nonfiction, fiction, short, uni = docs[0], docs[1], docs[2], docs[3]
i = nonfiction.index("principles")      # [i + 3, ...) starts inside "principles"
j = fiction.index("Hammer-Heads")       # ends inside "Hammer"
k = uni.index("\U0001F469\u200d\U0001F4BB")  # woman technologist: woman, ZWJ, laptop
spans = [
    {"text": nonfiction, "spans": [[i + 3, i + 120], [0, 40], [20, 300], [2308, len(nonfiction)], [1000, 1003],
                                   [0, len(nonfiction)]]},
    {"text": fiction, "spans": [[j + 2, j + 9], [0, 126], [0, 126], [100, 700], [j, j + 3]]},
    {"text": short, "spans": [[4, 12], [0, len(short)], [43, 44]]},
    {"text": uni, "spans": [[k + 1, k + 2], [k, k + 2], [0, 3], [186, 200], [0, len(uni)]]},
]
write("spans.jsonl", spans)
PY

# Our JSON lines against the reference's: the same spans, tokens and windows, every embedding value
# within 1e-5 (or, with --differ, some value further than 1e-5 away). Exit 1 otherwise.
compare() {  # REF.jsonl MINE.jsonl NAME [--differ]
  "$py" - "$@" <<'PY'
import json, sys
import numpy as np
ref = [json.loads(l) for l in open(sys.argv[1])]
mine = [json.loads(l) for l in open(sys.argv[2])]
name, differ = sys.argv[3], sys.argv[4:] == ["--differ"]
ok, diff = len(ref) == len(mine), 0.0
for r, m in zip(ref, mine):
    ok &= sorted(m) == ["embeddings", "spans", "tokens", "windows"]
    ok &= m.get("spans") == r["spans"] and m.get("tokens") == r["tokens"] and m.get("windows") == r["windows"]
    a, b = np.float32(m.get("embeddings")), np.float32(r["embeddings"])
    ok &= a.shape == b.shape
    if a.shape == b.shape and a.size:
        diff = max(diff, float(np.abs(a - b).max()))
    elif a.shape != b.shape:
        diff = np.inf
ok &= (diff > 1e-5) if differ else (diff <= 1e-5)
windows = [r["windows"] for r in ref]
chunks = [len(r["spans"]) for r in ref]
print(f"  {name:<34} windows {windows} chunks {chunks} max abs diff {diff:.2e}{'' if ok else '  FAIL'}")
sys.exit(0 if ok else 1)
PY
}

failed=()
# case_ NAME DOCS OPTIONS...: the reference and ours with the same options (the reference takes a
# prompt's ids from the golden prompt record).
case_() {
  local name=$1 docs=$2
  shift 2
  local tag=${name//[^a-zA-Z0-9]/_}
  local ref_opts=("$@")
  [[ " $* " == *" --prompt "* ]] && ref_opts+=(--prompt-ids-from-golden)
  "$py" "$tools/late_chunking_reference.py" --goldens "$goldens" --docs "$docs" --out "$work/ref-$tag.jsonl" \
    "${ref_opts[@]}"
  if ! "$roberta" embed --late-chunking --dtype fp32 "$@" < "$docs" > "$work/mine-$tag.jsonl" \
      2> "$work/mine-$tag.err"; then
    echo "  $name: roberta failed: $(head -c 300 "$work/mine-$tag.err")"
    failed+=("$name")
    return 0
  fi
  compare "$work/ref-$tag.jsonl" "$work/mine-$tag.jsonl" "$name" || failed+=("$name")
}

docs=$work/docs.jsonl
case_ "sentences, default overlap" "$docs" --model "$m" --max-length 40
case_ "--overlap 0" "$docs" --model "$m" --max-length 40 --overlap 0
case_ "--overlap 20" "$docs" --model "$m" --max-length 40 --overlap 20
case_ "--chunk-by tokens --chunk-tokens 16" "$docs" --model "$m" --max-length 40 --chunk-by tokens --chunk-tokens 16
case_ "sentences --chunk-tokens 60" "$docs" --model "$m" --max-length 40 --chunk-tokens 60
case_ "given spans" "$work/spans.jsonl" --model "$m" --max-length 40
case_ "--prompt 'search_document: '" "$docs" --model "$m" --max-length 40 --prompt "search_document: "
case_ "--max-length 512" "$docs" --model "$m" --max-length 512
case_ "--no-normalize" "$docs" --model "$m" --max-length 40 --no-normalize
case_ "cls pooling + Dense 24 tanh" "$docs" --model "$work/dense" --max-length 40

# Batch composition: each document alone, and the documents in reverse order, give the same bytes.
mine=$work/mine-sentences__default_overlap.jsonl
if [[ -s $mine ]]; then
  "$roberta" embed --late-chunking --dtype fp32 --model "$m" --max-length 40 --batch-size 1 < "$docs" \
    > "$work/alone.jsonl"
  "$roberta" embed --late-chunking --dtype fp32 --model "$m" --max-length 40 < "$work/reversed.jsonl" |
    tac > "$work/reversed-back.jsonl"
  if cmp -s "$work/alone.jsonl" "$mine" && cmp -s "$work/reversed-back.jsonl" "$mine"; then
    echo "  --batch-size 1 and reversed order give the same bytes"
  else
    failed+=("batch composition changes the output")
  fi
else
  failed+=("batch composition: no default output")
fi

# Bad inputs: refused with a non-zero exit and a message naming the line (line 2; line 1 is the golden
# `short` document).
bad() {  # NAME LINE2 [OPTIONS...]
  local name=$1 line=$2
  shift 2
  printf '"The quick brown fox jumps over the lazy dog."\n%s\n' "$line" > "$work/bad.jsonl"
  if "$roberta" embed --late-chunking --dtype fp32 --model "$m" --max-length 40 "$@" < "$work/bad.jsonl" \
      > /dev/null 2> "$work/bad.err"; then
    echo "  bad input accepted: $name"
    failed+=("bad input accepted: $name")
  elif ! grep -qi "line 2" "$work/bad.err"; then
    echo "  bad input without its line number: $name: $(head -c 300 "$work/bad.err")"
    failed+=("bad input message: $name")
  else
    echo "  refused: $name: $(head -n 1 "$work/bad.err" | head -c 160)"
  fi
}
bad "span past the end of the text" '{"text": "Short text.", "spans": [[0, 12]]}'
bad "span with start == end" '{"text": "Short text.", "spans": [[3, 3]]}'
bad "span with start > end" '{"text": "Short text.", "spans": [[5, 2]]}'
bad "line not JSON" 'this is not JSON'
if "$roberta" embed --late-chunking --dtype fp32 --model "$m" --max-length 40 --overlap 38 < "$docs" \
    > /dev/null 2> "$work/bad.err"; then
  failed+=("bad input accepted: --overlap 38 with 38 document tokens per window")
elif ! grep -qi "overlap" "$work/bad.err"; then
  failed+=("bad input message: --overlap 38 does not name --overlap")
else
  echo "  refused: --overlap 38 (W = 38): $(head -n 1 "$work/bad.err" | head -c 160)"
fi

echo "negative control (must differ by more than 1e-5):"
"$py" "$tools/late_chunking_reference.py" --goldens "$goldens" --docs "$docs" --model "$m" --max-length 40 \
  --stitch drop-overlap --out "$work/ref-drop-overlap.jsonl"
if [[ -s $mine ]]; then
  compare "$work/ref-drop-overlap.jsonl" "$mine" "reference --stitch drop-overlap" --differ ||
    failed+=("negative control: drop-overlap stitching is within 1e-5 of ours")
else
  failed+=("negative control: no output of ours")
fi

if ((${#failed[@]})); then
  printf 'FAIL: %s\n' "${failed[@]}"
  exit 1
fi
echo "all late-chunking cases within 1e-5"
