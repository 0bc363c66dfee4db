#!/usr/bin/env bash
# Live PyTorch parity for fine-tuned heads and model variants: random-weight checkpoints
# (tools/make_test_model.py) of RobertaForSequenceClassification (single-label, multi-label,
# 1-label regression as cross-encoders have, NLI with entailment at id 0 and at id 2),
# ForTokenClassification (BIO and IO labels), ForQuestionAnswering, roberta-prelayernorm,
# data2vec-text, token type ids (type_vocab_size 2) and relative_key / relative_key_query position
# embeddings; PyTorch's outputs (tools/dump_reference.py: hidden states, and logits, pooler_output,
# sequence_logits, token_logits, start_logits/end_logits, last_hidden_state, token_type_ids as the
# model has them) and `roberta compare` on each, which must pass. Then negative controls that
# `roberta compare` must reject: if one passes, the script fails.
# Inputs per model: a short sequence; a batch of 3 lengths right-padded and left-padded; one
# sequence of the model's full length (512 tokens, max_position_embeddings 514).
# Usage: run_heads_parity.sh ROBERTA_BINARY WORK_DIR
set -euo pipefail
roberta=$(realpath "$1")
work=$2
here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/../../tools" && pwd)
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
atol=1e-4

# Inputs, and token type ids for them (the second half of each sequence is segment 1, padding 0),
# in the padded layout of each padding side.
"$py" - "$work" <<'PY'
import json, random, sys
import numpy as np
work = sys.argv[1]
rng = random.Random(7)
def seq(n):
    return [0] + [rng.randrange(4, 50264) for _ in range(n - 2)] + [2]
for name, seqs in (("short", [seq(9)]), ("batch", [seq(7), seq(23), seq(3)]), ("longest", [seq(512)])):
    json.dump(seqs, open(f"{work}/{name}.json", "w"))
    L = max(map(len, seqs))
    for padding in ("right", "left"):
        types = np.zeros((len(seqs), L), dtype=np.int64)
        for b, s in enumerate(seqs):
            start = 0 if padding == "right" else L - len(s)
            types[b, start + len(s) // 2:start + len(s)] = 1
        np.save(f"{work}/types-{name}-{padding}.npy", types)
PY

failures=0
failed=()
check() {  # check NAME MODEL_DIR INPUT PADDING [TYPE_IDS]
  local name=$1 model=$2 input=$3 padding=$4 types=${5:-}
  local dump="$work/dump-$name"
  local extra=()
  [ -n "$types" ] && extra=(--type-ids "$work/types-$input-$padding.npy")
  if ! "$py" "$tools/dump_reference.py" --model "$model" --ids "$work/$input.json" --padding "$padding" \
      --out "$dump" "${extra[@]}" > "$work/reference-$name.txt" 2>&1; then
    echo "FAIL  $name: the PyTorch reference failed"; cat "$work/reference-$name.txt"
    failures=$((failures + 1)); failed+=("$name"); return 0
  fi
  if "$roberta" compare --model "$model" --reference "$dump" --atol "$atol" --rtol 0 > "$work/compare-$name.txt" 2>&1; then
    echo "ok    $name: $(tail -n 1 "$work/compare-$name.txt")"
  else
    echo "FAIL  $name"; cat "$work/compare-$name.txt"; failures=$((failures + 1)); failed+=("$name")
  fi
}

run_model() {  # run_model NAME [types] -- MAKE_ARGS...
  local name=$1 types=""; shift
  if [ "$1" = types ]; then types=1; shift; fi
  [ "$1" = -- ] && shift
  "$py" "$tools/make_test_model.py" --out "$work/$name" --preset tiny --no-tokenizer "$@" > /dev/null
  check "$name-short" "$work/$name" short right "$types"
  check "$name-batch-right" "$work/$name" batch right "$types"
  check "$name-batch-left" "$work/$name" batch left "$types"
  check "$name-longest" "$work/$name" longest right "$types"
}

must_fail() {  # must_fail NAME MODEL_DIR DUMP_DIR
  local name=$1 model=$2 dump=$3
  if "$roberta" compare --model "$model" --reference "$dump" --atol "$atol" --rtol 0 > "$work/compare-$name.txt" 2>&1; then
    echo "FAIL  $name: a wrong model passed the comparison"; cat "$work/compare-$name.txt"
    failures=$((failures + 1)); failed+=("$name")
  else
    echo "ok    $name: detected ($(grep -m1 -E 'FAIL|error' "$work/compare-$name.txt" || tail -n 1 "$work/compare-$name.txt"))"
  fi
}

edit_config() {  # edit_config MODEL_DIR KEY JSON_VALUE
  "$py" - "$1/config.json" "$2" "$3" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c[sys.argv[2]] = json.loads(sys.argv[3]); json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
}

swap_rows() {  # swap_rows MODEL_DIR TENSOR_PREFIX I J: swaps rows I and J of PREFIX.weight and PREFIX.bias
  PYTHONPATH="$tools" "$py" - "$1/model.safetensors" "$2" "$3" "$4" <<'PY'
import sys
from roberta_ref.safetensors_io import read_safetensors, write_safetensors
path, prefix, i, j = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sd = read_safetensors(path)
for k in (prefix + ".weight", prefix + ".bias"):
    sd[k][[i, j]] = sd[k][[j, i]]
write_safetensors(path, sd, metadata={"format": "pt"}, overwrite=True)
PY
}

# Sequence classification (no pooler: add_pooling_layer=False).
run_model seq-single -- --seed 11 --head sequence --labels negative,neutral,positive \
  --problem-type single_label_classification
run_model seq-multi -- --seed 12 --head sequence --labels toxic,obscene,insult,threat \
  --problem-type multi_label_classification
# A cross-encoder: one regression output, id2label {"0": "LABEL_0"}, no num_labels key.
run_model seq-regression -- --seed 13 --head sequence --num-labels 1 --problem-type regression --no-num-labels
run_model nli-entailment0 -- --seed 14 --head sequence --labels entailment,neutral,contradiction
run_model nli-entailment2 -- --seed 15 --head sequence --labels contradiction,neutral,entailment
# Token classification.
run_model token-bio -- --seed 16 --head token --labels O,B-PER,I-PER,B-ORG,I-ORG,B-LOC,I-LOC,B-MISC,I-MISC
run_model token-io -- --seed 17 --head token --labels O,PER,ORG,LOC
# Extractive question answering.
run_model qa -- --seed 18 --head qa
# Model variants: pre-LayerNorm (MLM head and pooler over the final LayerNorm), data2vec-text,
# token type ids, relative position embeddings.
run_model prelayernorm -- --seed 19 --model-type roberta-prelayernorm
run_model data2vec-text -- --seed 20 --model-type data2vec-text --head sequence --labels a,b,c
run_model type-vocab-2 types -- --seed 21 --type-vocab-size 2 --head sequence --labels not_duplicate,duplicate
run_model relative-key -- --seed 22 --position-embedding-type relative_key
run_model relative-key-query -- --seed 23 --position-embedding-type relative_key_query --head qa

# Negative controls: each must be reported as a mismatch (or refused).
"$py" "$tools/make_test_model.py" --out "$work/other-seed" --preset tiny --no-tokenizer --seed 111 --head sequence \
  --labels negative,neutral,positive --problem-type single_label_classification > /dev/null
must_fail neg-other-seed "$work/other-seed" "$work/dump-seq-single-short"
cp -r "$work/relative-key" "$work/relative-as-absolute"
edit_config "$work/relative-as-absolute" position_embedding_type '"absolute"'
must_fail neg-relative-key-as-absolute "$work/relative-as-absolute" "$work/dump-relative-key-batch-right"
cp -r "$work/relative-key-query" "$work/rkq-as-rk"
edit_config "$work/rkq-as-rk" position_embedding_type '"relative_key"'
must_fail neg-relative-key-query-as-key "$work/rkq-as-rk" "$work/dump-relative-key-query-batch-right"
# The engine must read token_type_ids.npy: the same dump without it means type 0 everywhere.
cp -r "$work/dump-type-vocab-2-batch-right" "$work/dump-types-dropped"
rm "$work/dump-types-dropped/token_type_ids.npy"
must_fail neg-type-ids-ignored "$work/type-vocab-2" "$work/dump-types-dropped"
# Head outputs must be compared, in label order: entailment (id 2) and contradiction swapped.
cp -r "$work/nli-entailment2" "$work/nli-swapped"
swap_rows "$work/nli-swapped" classifier.out_proj 0 2
must_fail neg-sequence-labels-swapped "$work/nli-swapped" "$work/dump-nli-entailment2-short"
cp -r "$work/token-bio" "$work/token-swapped"
swap_rows "$work/token-swapped" classifier 1 2
must_fail neg-token-labels-swapped "$work/token-swapped" "$work/dump-token-bio-short"
cp -r "$work/qa" "$work/qa-swapped"
swap_rows "$work/qa-swapped" qa_outputs 0 1
must_fail neg-start-end-swapped "$work/qa-swapped" "$work/dump-qa-short"

if [ "$failures" -ne 0 ]; then
  echo "$failures of the heads parity checks failed: ${failed[*]}"
  exit 1
fi
echo "all heads parity comparisons passed"
