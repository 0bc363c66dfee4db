#!/usr/bin/env bash
# Live PyTorch parity: makes random-weight checkpoints (tools/make_test_model.py), dumps PyTorch's
# outputs (tools/dump_reference.py) and checks that `roberta compare` finds every hidden state,
# the logits and the pooler within tolerance. Usage: run_parity.sh ROBERTA_BINARY WORK_DIR [--quick]
set -euo pipefail
roberta=$(realpath "$1")
work=$2
quick=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/../../tools" && pwd)
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
atol=1e-4

# Inputs: one short sequence; a batch of 3 lengths (right- and left-padded); one 512-token sequence.
"$py" - "$work" <<'PY'
import json, random, sys
work = sys.argv[1]
def seq(n, vocab, rng):
    return [0] + [rng.randrange(4, vocab - 1) for _ in range(n - 2)] + [2]
for vocab, tag in ((50265, "v50265"), (300, "v300")):
    rng = random.Random(vocab)
    json.dump([seq(9, vocab, rng)], open(f"{work}/short-{tag}.json", "w"))
    json.dump([seq(7, vocab, rng), seq(23, vocab, rng), seq(3, vocab, rng)], open(f"{work}/batch-{tag}.json", "w"))
    # the longest input the model takes: 512 tokens for 514 positions, 64 for the small-vocab preset
    json.dump([seq(512 if vocab > 300 else 64, vocab, rng)], open(f"{work}/long-{tag}.json", "w"))
PY

failures=0
check() {  # check NAME MODEL_DIR IDS_JSON PADDING
  local name=$1 model=$2 ids=$3 padding=$4
  local dump="$work/dump-$name"
  "$py" "$tools/dump_reference.py" --model "$model" --ids "$ids" --padding "$padding" --out "$dump" > /dev/null
  if "$roberta" compare --model "$model" --reference "$dump" --atol "$atol" --rtol 0 > "$work/compare-$name.txt"; then
    echo "ok    $name: $(tail -n 1 "$work/compare-$name.txt")"
  else
    echo "FAIL  $name"; cat "$work/compare-$name.txt"; failures=$((failures + 1))
  fi
}

run_model() {  # run_model NAME VOCAB_TAG MAKE_ARGS...
  local name=$1 tag=$2; shift 2
  "$py" "$tools/make_test_model.py" --out "$work/$name" "$@" > /dev/null
  check "$name-short" "$work/$name" "$work/short-$tag.json" right
  [ -n "$quick" ] && return 0
  check "$name-batch-right" "$work/$name" "$work/batch-$tag.json" right
  check "$name-batch-left" "$work/$name" "$work/batch-$tag.json" left
  check "$name-longest" "$work/$name" "$work/long-$tag.json" right
}

# The comparison must be able to fail: the same checkpoint with the tanh GELU in config.json (the
# mistake a port can make) has to be reported, and by a wide margin.
must_fail() {  # must_fail NAME MODEL_DIR DUMP_DIR
  local name=$1 model=$2 dump=$3
  if "$roberta" compare --model "$model" --reference "$dump" --atol "$atol" --rtol 0 > "$work/compare-$name.txt"; then
    echo "FAIL  $name: a wrong model passed the comparison"; failures=$((failures + 1))
  else
    echo "ok    $name: detected ($(grep -m1 FAIL "$work/compare-$name.txt" | awk '{print $1, "max abs diff", $3}'))"
  fi
}

run_model tiny v50265 --preset tiny --seed 1
run_model odd v50265 --preset odd --seed 2
run_model large-weights v50265 --preset large-weights --seed 3
run_model tanh-gelu v50265 --preset large-weights --seed 4 --hidden-act gelu_new
run_model quick-gelu v300 --preset small-vocab --seed 5 --hidden-act quick_gelu
run_model variants-tied v300 --preset small-vocab --seed 6 --tied --no-decoder-bias --gamma-beta --position-ids
run_model variants-no-prefix v300 --preset small-vocab --seed 7 --no-prefix
run_model f16-sharded v300 --preset small-vocab --seed 8 --dtype f16 --shards 3
run_model bf16 v300 --preset small-vocab --seed 9 --dtype bf16 --no-pooler

# config.json's num_hidden_layers below the checkpoint's layers (a model cut down by editing the
# config): the first layers run, as in transformers (the reference builds only those), with a warning.
cp -r "$work/tiny" "$work/fewer-layers"
"$py" - "$work/fewer-layers/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["num_hidden_layers"] -= 1; json.dump(c, open(sys.argv[1], "w"))
PY
check fewer-layers-short "$work/fewer-layers" "$work/short-v50265.json" right
if ! "$roberta" info --model "$work/fewer-layers" 2>&1 >/dev/null |
    grep -q "layers; config.json's num_hidden_layers = "; then
  echo "FAIL  fewer-layers: no warning about the unused layers"; failures=$((failures + 1))
fi

# Negative controls on the large-weights model: tanh-GELU instead of erf, and a wrong LayerNorm eps.
cp -r "$work/large-weights" "$work/wrong-act"
"$py" - "$work/wrong-act/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["hidden_act"] = "gelu_new"; json.dump(c, open(sys.argv[1], "w"))
PY
must_fail wrong-activation "$work/wrong-act" "$work/dump-large-weights-short"
cp -r "$work/large-weights" "$work/wrong-eps"
"$py" - "$work/wrong-eps/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["layer_norm_eps"] = 1e-3; json.dump(c, open(sys.argv[1], "w"))
PY
must_fail wrong-layer-norm-eps "$work/wrong-eps" "$work/dump-large-weights-short"

if [ "$failures" -ne 0 ]; then echo "$failures comparisons failed"; exit 1; fi
echo "all parity comparisons passed"
