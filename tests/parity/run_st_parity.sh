#!/usr/bin/env bash
# sentence-transformers folders: `roberta embed` against the PyTorch reference's sentence
# embedding (tools/dump_reference.py: Transformer -> Pooling -> Dense -> Normalize as the folder's
# modules.json lists them), for every pooling mode and several concatenated, Dense layers with tanh and identity,
# Normalize, sentence_bert_config.json's max_seq_length (a text longer than it), and prompts
# (--prompt-name against the reference run on the prompt + text). A negative control must fail.
# Usage: run_st_parity.sh ROBERTA_BINARY WORK_DIR
set -euo pipefail
roberta=$(realpath "$1")
work=$2
here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/../../tools" && pwd)
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"

# Texts: short ones and one longer than the models' max_seq_length (62 tokens for --preset tiny).
{
  echo "The weather is lovely today."
  echo "It is sunny outside, and the children are playing in the park."
  echo "A"
  for _ in $(seq 12); do printf 'one more clause, and '; done; echo "the end."
} > "$work/texts.txt"
sed 's/^/query: /' "$work/texts.txt" > "$work/texts-with-prompt.txt"

# max |a - b| over the rows; exit 1 above 1e-5.
compare() {
  "$py" - "$1" "$2" "$3" <<'PY'
import json, sys
import numpy as np
ref = np.load(sys.argv[1])
mine = np.array([json.loads(l) for l in open(sys.argv[2])], dtype=np.float32)
d = float(np.abs(ref - mine).max()) if ref.shape == mine.shape else float("inf")
print(f"  {sys.argv[3]:<34} {ref.shape} max abs diff {d:.2e}")
sys.exit(0 if d <= 1e-5 else 1)
PY
}

failed=()
check() {  # NAME MAKE_OPTIONS... -- EMBED_OPTIONS...
  local name=$1
  shift
  local make=() embed=()
  while [ "$1" != "--" ]; do make+=("$1"); shift; done
  shift
  embed=("$@")
  "$py" "$tools/make_test_model.py" --out "$work/$name" --preset tiny --seed 41 "${make[@]}" > /dev/null
  local texts=$work/texts.txt
  [[ " ${embed[*]} " == *" --prompt-name "* ]] && texts=$work/texts-with-prompt.txt
  "$py" "$tools/dump_reference.py" --model "$work/$name" --text-file "$texts" --out "$work/$name-dump" --no-logits > /dev/null
  "$roberta" embed --dtype fp32 --model "$work/$name" "${embed[@]}" < "$work/texts.txt" > "$work/$name.jsonl" 2> "$work/$name.err"
  compare "$work/$name-dump/sentence_embedding.npy" "$work/$name.jsonl" "$name" || failed+=("$name")
}

check mean-dense-normalize --st-pooling mean --st-dense 24:tanh --st-normalize --
check cls-dense-identity --st-pooling cls --st-dense 40:identity --
check max-normalize --st-pooling max --st-normalize --
check mean-two-dense --st-pooling mean --st-dense 24:tanh --st-dense 16:gelu --st-normalize --
check prompt --st-pooling mean --st-normalize --st-prompts '{"query": "query: "}' -- --prompt-name query
# sentence-transformers' other modes, and several modes concatenated (into a Dense layer)
check mean-sqrt-len --st-pooling mean_sqrt_len_tokens --
check weightedmean --st-pooling weightedmean --
check lasttoken --st-pooling lasttoken --st-normalize --
check cls-max-mean-dense --st-pooling cls,max,mean --st-dense 24:tanh --
check all-modes --st-pooling cls,max,mean,mean_sqrt_len_tokens,weightedmean,lasttoken --

# max_seq_length 16 in sentence_bert_config.json: the reference gets the ids cut as Hugging Face's
# tokenizer cuts them for sentence-transformers (the first 15 tokens, then </s>).
name=max-seq-length
cp -r "$work/mean-dense-normalize" "$work/$name"
"$py" -c 'import json,sys; p=sys.argv[1]; c=json.load(open(p)); c["max_seq_length"]=16; json.dump(c, open(p,"w"))' \
  "$work/$name/sentence_bert_config.json"
"$roberta" tokenize --model "$work/$name" < "$work/texts.txt" |
  "$py" -c 'import json,sys; print(json.dumps([(i[:15] + [2]) if len(i) > 16 else i for i in (json.loads(l)["ids"] for l in sys.stdin)]))' \
  > "$work/$name-ids.json"
"$py" "$tools/dump_reference.py" --model "$work/$name" --ids "$work/$name-ids.json" --out "$work/$name-dump" --no-logits > /dev/null
"$roberta" embed --dtype fp32 --model "$work/$name" < "$work/texts.txt" > "$work/$name.jsonl" 2> "$work/$name.err"
compare "$work/$name-dump/sentence_embedding.npy" "$work/$name.jsonl" "$name" || failed+=("$name")
grep -q "line 4 was truncated" "$work/$name.err" || failed+=("$name: no truncation warning for line 4")

# Whitespace at both ends of a text, and include_prompt false with a prompt that ends in a space:
# the reference strips each prompt + text with Python's str.strip, as sentence-transformers'
# Transformer.tokenize does, and leaves out the tokens of the stripped prompt minus its </s>.
{
  printf '  The weather is lovely today. \t\n'
  printf '\xe3\x80\x80It is sunny outside.\xc2\xa0\xe2\x80\x89\n'  # U+3000 ... U+00A0 U+2009
  printf '\x1f\xc2\x85A\x0b\x0c\n'                                   # U+001F U+0085 A VT FF
} > "$work/texts-spaced.txt"
cat "$work/texts.txt" >> "$work/texts-spaced.txt"
st_case() {  # NAME PROMPT -- MAKE_OPTIONS... -- EMBED_OPTIONS... (texts-spaced.txt, the reference stripping them)
  local name=$1 prompt=$2
  shift 3
  local make=()
  while [ "$1" != "--" ]; do make+=("$1"); shift; done
  shift
  "$py" "$tools/make_test_model.py" --out "$work/$name" --preset tiny --seed 43 "${make[@]}" > /dev/null
  "$py" "$tools/dump_reference.py" --model "$work/$name" --text-file "$work/texts-spaced.txt" --strip \
    --prompt "$prompt" --out "$work/$name-dump" --no-logits > /dev/null
  "$roberta" embed --dtype fp32 --model "$work/$name" "$@" < "$work/texts-spaced.txt" > "$work/$name.jsonl" \
    2> "$work/$name.err"
  compare "$work/$name-dump/sentence_embedding.npy" "$work/$name.jsonl" "$name" || failed+=("$name")
}
st_case whitespace "" -- --st-pooling mean --
st_case prompt-excluded "query: " -- --st-pooling mean,max --st-prompts '{"query": "query: "}' --st-exclude-prompt \
  -- --prompt-name query

# Negative control: without the folder's Normalize module the embeddings must differ.
echo "negative control (must fail):"
"$roberta" embed --dtype fp32 --model "$work/mean-dense-normalize" --no-normalize < "$work/texts.txt" > "$work/control.jsonl"
if compare "$work/mean-dense-normalize-dump/sentence_embedding.npy" "$work/control.jsonl" "without Normalize"; then
  failed+=("negative control passed")
fi

if ((${#failed[@]})); then
  printf 'FAIL: %s\n' "${failed[@]}"
  exit 1
fi
echo "all sentence-transformers cases within 1e-5"
