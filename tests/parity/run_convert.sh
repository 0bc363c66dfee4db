#!/usr/bin/env bash
# pytorch_model.bin in both formats (torch >= 1.6 zip and the legacy pickle) converts to a
# model.safetensors whose every tensor equals the safetensors checkpoint made from the same seed,
# and whose engine outputs are identical. Usage: run_convert.sh ROBERTA_BINARY WORK_DIR
set -euo pipefail
roberta=$(realpath "$1")
work=$2
tools=$(cd "$(dirname "$0")/../../tools" && pwd)
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
"$py" "$tools/make_test_model.py" --out "$work/st" --preset small-vocab --seed 21 --tied > /dev/null
echo '[[0, 5, 17, 42, 2], [0, 7, 2]]' > "$work/ids.json"
"$py" -c "import numpy as np, json; ids=json.load(open('$work/ids.json')); L=max(map(len,ids)); np.save('$work/ids.npy', np.array([s+[1]*(L-len(s)) for s in ids], dtype=np.int64))"
"$roberta" dump --model "$work/st" --input-ids "$work/ids.npy" --out "$work/dump-st" 2> /dev/null
for format in bin-zip bin-legacy; do
  "$py" "$tools/make_test_model.py" --out "$work/$format" --preset small-vocab --seed 21 --tied --format "$format" > /dev/null
  "$py" "$tools/convert_checkpoint.py" "$work/$format" > /dev/null
  # refuses to overwrite
  if "$py" "$tools/convert_checkpoint.py" "$work/$format" 2> "$work/err.txt"; then echo "FAIL: overwrote without --force"; exit 1; fi
  grep -q "already exists" "$work/err.txt"
  PYTHONPATH="$tools" "$py" -c "
from roberta_ref.safetensors_io import read_safetensors
a, b = read_safetensors('$work/st/model.safetensors'), read_safetensors('$work/$format/model.safetensors')
assert a.keys() == b.keys(), (sorted(a.keys() ^ b.keys()))
for k in a:
    assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and bool((a[k] == b[k]).all()), k
print('$format: %d tensors equal' % len(a))
"
  "$roberta" dump --model "$work/$format" --input-ids "$work/ids.npy" --out "$work/dump-$format" 2> /dev/null
  for f in "$work"/dump-st/*.npy; do cmp "$f" "$work/dump-$format/$(basename "$f")"; done
  echo "$format: engine outputs identical to the safetensors checkpoint"
done
# The engine points .bin-only folders at the converter.
rm "$work/bin-zip/model.safetensors"
if "$roberta" info --model "$work/bin-zip" 2> "$work/err.txt"; then echo "FAIL: loaded a .bin folder"; exit 1; fi
grep -q "convert_checkpoint.py" "$work/err.txt"
echo "conversion checks passed"
