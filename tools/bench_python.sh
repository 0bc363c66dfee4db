#!/usr/bin/env bash
# Python encode throughput against `roberta embed` on the same inputs (not a test).
#   bash tools/bench_python.sh [BUILD_DIR] [MODEL_DIR] [LINES] [ROUNDS] [THREADS]
# Defaults: build-py, models/demo, 2000 lines of the shared corpus, 3 rounds, all cores. Both run
# as processes end to end (load the model, read the lines, embed, write .npy), interleaved round by
# round; medians are printed, and the Python figure for encode() alone. Needs the build tree's
# package (cmake --build BUILD_DIR --target roberta_cpp_core roberta_cli).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-py}
model=${2:-models/demo}
n=${3:-2000}
rounds=${4:-3}
threads=${5:-0}
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corpus=${ROBERTA_SHARED_DIR:-../shared}/assets/corpus
"$py" - "$corpus" "$n" > "$work/lines.txt" <<'PY'
import pathlib, sys
out = []
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.txt")):
    out += [l for l in f.read_text(encoding="utf-8").split("\n") if len(l.strip()) > 20]
print("\n".join(out[: int(sys.argv[2])]))
PY
lines=$(wc -l < "$work/lines.txt")
tokens=$("$build/roberta" tokenize --model "$model" < "$work/lines.txt" | "$py" -c 'import json,sys; print(sum(len(json.loads(l)["ids"]) for l in sys.stdin))')
cat > "$work/encode.py" <<'PY'
import sys, time
import numpy as np
import roberta_cpp
t0 = time.perf_counter()
model = roberta_cpp.SentenceTransformer(sys.argv[1], threads=int(sys.argv[4]))
with open(sys.argv[2], encoding="utf-8") as f:
    texts = f.read().split("\n")[:-1]
t1 = time.perf_counter()
emb = model.encode(texts)
t2 = time.perf_counter()
np.save(sys.argv[3], emb)
print(f"{t2 - t1:.4f}")
PY
thread_opt=()
[ "$threads" != 0 ] && thread_opt=(--threads "$threads")
declare -a cli py_total py_encode
for r in $(seq "$rounds"); do
  t=$( { /usr/bin/time -f %e "$build/roberta" embed --model "$model" "${thread_opt[@]}" --format npy \
         --output "$work/cli.npy" --force "$work/lines.txt" > /dev/null; } 2>&1 | tail -1)
  cli+=("$t")
  out=$( { /usr/bin/time -f %e env PYTHONPATH="$build/python" "$py" "$work/encode.py" "$model" "$work/lines.txt" \
           "$work/py.npy" "$threads"; } 2>&1)
  py_encode+=("$(echo "$out" | head -1)")
  py_total+=("$(echo "$out" | tail -1)")
done
"$py" - "$lines" "$tokens" "${cli[*]}" "${py_total[*]}" "${py_encode[*]}" "$work/cli.npy" "$work/py.npy" <<'PY'
import statistics, sys
import numpy as np
lines, tokens = int(sys.argv[1]), int(sys.argv[2])
cli, total, enc = ([float(x) for x in a.split()] for a in sys.argv[3:6])
diff = float(np.abs(np.load(sys.argv[6]) - np.load(sys.argv[7])).max())
m = {k: statistics.median(v) for k, v in (("cli", cli), ("total", total), ("enc", enc))}
print(f"{lines} lines, {tokens} tokens; medians of {len(cli)} rounds; max |python - cli| = {diff:.1e}")
print(f"{'roberta embed (process)':<28} {m['cli']:7.2f} s {tokens / m['cli']:>10,.0f} tokens/s")
print(f"{'python encode (process)':<28} {m['total']:7.2f} s {tokens / m['total']:>10,.0f} tokens/s  "
      f"({m['cli'] / m['total']:.3f}x of roberta embed)")
print(f"{'python encode() alone':<28} {m['enc']:7.2f} s {tokens / m['enc']:>10,.0f} tokens/s")
PY
