#!/usr/bin/env bash
# Feeds roberta bad inputs of every kind and prints a Markdown table of what the user sees
# (message and exit status). Usage: bash tools/bad_inputs.sh BUILD_DIR > docs/bad-inputs.md
# (BUILD_DIR, or the roberta program itself; CTest's bad_inputs_doc checks that the file is current)
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ -f "${1:-}" ]]; then bin=$(realpath "$1"); else bin=$(realpath "${1:-build}")/roberta; fi
py=/usr/bin/python3
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
"$py" tools/make_test_model.py --out "$w/good" --preset tiny --seed 1 > /dev/null
"$py" tools/make_test_model.py --out "$w/nohead" --preset tiny --seed 1 --no-lm-head > /dev/null
"$py" tools/make_test_model.py --out "$w/m3pt" --preset tiny --seed 1 --m3-heads > /dev/null
"$py" tools/make_test_model.py --out "$w/nopooler" --preset tiny --seed 1 --no-pooler > /dev/null
"$py" tools/make_test_model.py --out "$w/cls" --preset tiny --seed 1 --head sequence --labels NEG,POS > /dev/null
"$py" tools/make_test_model.py --out "$w/nli" --preset tiny --seed 1 --head sequence --labels contradiction,neutral,entailment > /dev/null
"$py" tools/make_test_model.py --out "$w/ce" --preset tiny --seed 1 --head sequence --num-labels 1 > /dev/null
"$py" tools/make_test_model.py --out "$w/ner" --preset tiny --seed 1 --head token --labels O,B-PER,I-PER > /dev/null
"$py" tools/make_test_model.py --out "$w/qa" --preset tiny --seed 1 --head qa > /dev/null
variant() { rm -rf "$w/$1"; cp -r "$w/good" "$w/$1"; }
edit_config() { "$py" -c "import json,sys; p='$w/$1/config.json'; c=json.load(open(p)); $2; json.dump(c,open(p,'w'))"; }

rows=()
case_() {  # case_ DESCRIPTION STDIN COMMAND...
  local desc=$1 input=$2; shift 2
  local err status
  err=$(printf '%s\n' "$input" | "$@" 2>&1 >/dev/null | grep -E '^(error|warning)' | head -n 2 | sed "s|$w/||g" | tr '\n' ' ')
  printf '%s\n' "$input" | "$@" > /dev/null 2>&1; status=$?
  rows+=("| $desc | \`${err% }\` | $status |")
}

case_ "model folder does not exist" "" "$bin" fill-mask --model "$w/missing" "a <mask>"
variant notok; rm "$w/notok/tokenizer.json" "$w/notok/vocab.json" "$w/notok/merges.txt"
case_ "folder without tokenizer files" "" "$bin" fill-mask --model "$w/notok" "a <mask>"
variant vocabtxt; rm "$w/vocabtxt/tokenizer.json" "$w/vocabtxt/vocab.json" "$w/vocabtxt/merges.txt"
printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n' > "$w/vocabtxt/vocab.txt"
printf '{"mask_token": "<mask>"}' > "$w/vocabtxt/tokenizer_config.json"
case_ "BERT-style vocab.txt without the mask token its config names" "" \
  "$bin" fill-mask --model "$w/vocabtxt" "a [MASK]"
variant spmonly; rm "$w/spmonly/tokenizer.json" "$w/spmonly/vocab.json" "$w/spmonly/merges.txt"
printf 'x' > "$w/spmonly/sentencepiece.bpe.model"
case_ "only a SentencePiece model (slow XLM-R tokenizer files), no tokenizer.json" "" \
  "$bin" fill-mask --model "$w/spmonly" "a <mask>"
variant badspm; cp tests/data/hf/unigram/tokenizer.json "$w/badspm/tokenizer.json"
"$py" -c "import json; p='$w/badspm/tokenizer.json'; d=json.load(open(p)); \
d['normalizer']['normalizers'][0]['precompiled_charsmap']='AAAA'; json.dump(d,open(p,'w'))"
case_ "SentencePiece tokenizer.json with a broken precompiled_charsmap" "" \
  "$bin" fill-mask --model "$w/badspm" "a <mask>"
case_ "model without an MLM head" "" "$bin" fill-mask --model "$w/nohead" "a <mask>"
variant cfg1; printf '{"vocab_size": 50265,' > "$w/cfg1/config.json"
case_ "config.json is not valid JSON" "" "$bin" info --model "$w/cfg1"
variant cfg2; edit_config cfg2 'c["num_attention_heads"]=5'
case_ "hidden size not divisible by heads" "" "$bin" info --model "$w/cfg2"
variant cfg3; edit_config cfg3 'c["num_hidden_layers"]=-2'
case_ "negative number of layers" "" "$bin" info --model "$w/cfg3"
variant cfg4; edit_config cfg4 'c["hidden_size"]=32.5'
case_ "non-integer hidden size" "" "$bin" info --model "$w/cfg4"
variant cfg5; edit_config cfg5 'c["position_embedding_type"]="rotary"'
case_ "unsupported position_embedding_type" "" "$bin" info --model "$w/cfg5"
variant cfg6; edit_config cfg6 'c["intermediate_size"]=65'
case_ "tensor shape disagrees with config" "" "$bin" info --model "$w/cfg6"
variant st1; "$py" -c "p='$w/st1/model.safetensors'; d=open(p,'rb').read(); open(p,'wb').write(d[:len(d)//2])"
case_ "truncated model.safetensors" "" "$bin" info --model "$w/st1"
variant st2; "$py" -c "import struct; p='$w/st2/model.safetensors'; d=bytearray(open(p,'rb').read()); d[:8]=struct.pack('<Q', 1<<40); open(p,'wb').write(d)"
case_ "safetensors header length past the end" "" "$bin" info --model "$w/st2"
variant st3; "$py" - "$w/st3/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]; d = open(p, 'rb').read(); n = struct.unpack('<Q', d[:8])[0]; h = json.loads(d[8:8 + n])
h.pop('roberta.encoder.layer.1.output.dense.weight')
data, at = b'', 0  # the other tensors' bytes, one after another as the format requires
for name, t in sorted(((k, v) for k, v in h.items() if k != '__metadata__'), key=lambda kv: kv[1]['data_offsets']):
    s, e = t['data_offsets']; data += d[8 + n + s:8 + n + e]; t['data_offsets'] = [at, at + e - s]; at += e - s
b = json.dumps(h).encode(); b += b' ' * (-len(b) % 8)
open(p, 'wb').write(struct.pack('<Q', len(b)) + b + data)
PY
case_ "a tensor is missing" "" "$bin" info --model "$w/st3"
variant bin; rm "$w/bin/model.safetensors"; touch "$w/bin/pytorch_model.bin"
case_ "only pytorch_model.bin" "" "$bin" info --model "$w/bin"
case_ "fill-mask: line without <mask>" "no mask here" "$bin" fill-mask --model "$w/good"
case_ "fill-mask: empty line" "" "$bin" fill-mask --model "$w/good"
case_ "fill-mask: line longer than the model allows" "$(printf 'w %.0s' {1..600})<mask>" "$bin" fill-mask --model "$w/good"
case_ "fill-mask: invalid UTF-8" "$(printf 'caf\xc3 <mask>')" "$bin" fill-mask --model "$w/good"
case_ "fill-mask: --top-k 0" "" "$bin" fill-mask --model "$w/good" --top-k 0 "a <mask>"
case_ "unknown option" "" "$bin" fill-mask --model "$w/good" --topk 3 "a <mask>"
touch "$w/exists.jsonl"
case_ "embed --output onto an existing file" "text" "$bin" embed --model "$w/good" --output "$w/exists.jsonl"
case_ "embed: over-long line (truncated)" "$(printf 'w %.0s' {1..600})" "$bin" embed --model "$w/good"
case_ "embed --no-truncate: over-long line" "$(printf 'w %.0s' {1..600})" "$bin" embed --model "$w/good" --no-truncate
case_ "embed --pooling pooler, model without pooler" "x" "$bin" embed --model "$w/nopooler" --pooling pooler
case_ "embed --pooling median" "x" "$bin" embed --model "$w/good" --pooling median
case_ "embed --sparse: model without an MLM head" "x" "$bin" embed --model "$w/nohead" --sparse
case_ "embed --sparse --max-active-dims 0" "x" "$bin" embed --model "$w/good" --sparse --max-active-dims 0
case_ "embed --sparse with --pooling" "x" "$bin" embed --model "$w/good" --sparse --pooling mean
case_ "embed --max-active-dims without --sparse" "x" "$bin" embed --model "$w/good" --max-active-dims 5
case_ "embed --bge-m3: model without bge-m3's heads" "x" "$bin" embed --model "$w/good" --bge-m3
case_ "embed --bge-m3: heads not converted" "x" "$bin" embed --model "$w/m3pt" --bge-m3
case_ "embed --bge-m3 --m3-outputs dense,lexical" "x" "$bin" embed --model "$w/good" --bge-m3 --m3-outputs dense,lexical
case_ "embed --truncate-dim without --bge-m3" "x" "$bin" embed --model "$w/good" --truncate-dim 8
case_ "embed --late-chunking: line not JSON" "plain text" "$bin" embed --model "$w/good" --late-chunking
case_ "embed --late-chunking: span past the end" '{"text": "abc", "spans": [[0, 9]]}' "$bin" embed --model "$w/good" --late-chunking
case_ "embed --late-chunking: span without a token" '{"text": "a   b", "spans": [[2, 3]]}' "$bin" embed --model "$w/good" --late-chunking
case_ "embed --late-chunking --overlap as large as a window" '"a b"' "$bin" embed --model "$w/good" --late-chunking --max-length 10 --overlap 8
case_ "embed --late-chunking --chunk-by tokens without --chunk-tokens" '"a b"' "$bin" embed --model "$w/good" --late-chunking --chunk-by tokens
case_ "embed --overlap without --late-chunking" "x" "$bin" embed --model "$w/good" --overlap 4
case_ "embed --precision int4" "x" "$bin" embed --model "$w/good" --precision int4
case_ "embed --calibration-embeddings: not a .npy file" "x" "$bin" embed --model "$w/good" --precision int8 --calibration-embeddings "$w/good/config.json"
case_ "tokenize --input-format jsonl: not JSON" "not json" "$bin" tokenize --model "$w/good" --input-format jsonl
variant voc; "$py" -c "import json; p='$w/voc/vocab.json'; v=json.load(open(p)); v['Ġthe']=4; json.dump(v,open(p,'w'))"; rm "$w/voc/tokenizer.json"
case_ "vocab.json: two tokens with one id" "x" "$bin" tokenize --model "$w/voc"
variant mer; rm "$w/mer/tokenizer.json"; printf '#version: 0.2\nĠ zzzq\n' > "$w/mer/merges.txt"
case_ "merges.txt names an unknown token" "x" "$bin" tokenize --model "$w/mer"
case_ "classify: model without a classification head" "x" "$bin" classify --model "$w/good"
case_ "classify: over-long line" "$(printf 'w %.0s' {1..600})" "$bin" classify --model "$w/cls"
case_ "classify --input-format jsonl: not a pair" '["a", "b", "c"]' "$bin" classify --model "$w/cls" --input-format jsonl
case_ "classify: --top-k with --all" "x" "$bin" classify --model "$w/cls" --top-k 2 --all
case_ "zero-shot: model without an entailment label" "x" "$bin" zero-shot --model "$w/cls" --labels a,b
case_ "zero-shot: empty --labels" "x" "$bin" zero-shot --model "$w/nli" --labels ","
case_ "zero-shot: empty line" "" "$bin" zero-shot --model "$w/nli" --labels a,b
case_ "zero-shot --input-format jsonl: empty label list" '{"sequence": "x", "candidate_labels": []}' "$bin" zero-shot --model "$w/nli" --input-format jsonl
case_ "rerank: model with several labels" "x" "$bin" rerank --model "$w/nli" --query q
case_ "rerank: invalid UTF-8 document" "$(printf 'caf\xc3')" "$bin" rerank --model "$w/ce" --query q
case_ "rerank --pairs: not a pair" '["a"]' "$bin" rerank --model "$w/ce" --pairs
case_ "rerank --long-documents median" "x" "$bin" rerank --model "$w/ce" --query q --long-documents median
case_ "rerank --long-documents: stride not below the window" "$(printf 'w %.0s' {1..600})" "$bin" rerank --model "$w/ce" --query q --long-documents max --stride 600
case_ "ner: model without a token head" "x" "$bin" ner --model "$w/cls"
case_ "ner: --stride not below the window" "x" "$bin" ner --model "$w/ner" --max-length 16 --stride 16
case_ "qa: model without a QA head" '{"question": "q", "context": "c"}' "$bin" qa --model "$w/cls"
case_ "qa: empty context" '{"question": "Who?", "context": ""}' "$bin" qa --model "$w/qa"
case_ "qa: question longer than the window" '{"question": "Who is it, who is it, who is it?", "context": "Me."}' "$bin" qa --model "$w/qa" --max-seq-len 12
case_ "qa: line is not a JSON object" '"just a string"' "$bin" qa --model "$w/qa"
printf 'not numpy' > "$w/ids.npy"
case_ "dump: input ids not a .npy file" "" "$bin" dump --model "$w/good" --input-ids "$w/ids.npy" --out "$w/d"
case_ "compare: reference folder missing" "" "$bin" compare --model "$w/good" --reference "$w/nothere"

cat <<'MD'
# Bad inputs and what the user sees

Generated by `bash tools/bad_inputs.sh build` (paths shortened to the model folder's name). Every case ends with a message naming the file, field, line or option, and a non-zero exit status (1 for bad input or model, 2 for usage), except two that are answered with a warning, as documented: the over-long embed line, which is truncated, and the zero-shot model without an entailment label, which takes transformers' fallback.

MD
echo "| bad input | what roberta prints (stderr) | exit status |"
echo "| --- | --- | ---: |"
printf '%s\n' "${rows[@]}"
