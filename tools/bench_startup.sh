#!/usr/bin/env bash
# Time to a first result from the command line, as a user running one command feels it: the wall
# time of `roberta embed --dtype D` on one short line (process start, loading the model and its
# tokenizer, one forward pass, exit), for each precision; with two builds, interleaved, and the
# median of NEW/OLD over the rounds. A benchmark, not a test.
#
#   bash tools/bench_startup.sh MODEL ROUNDS BUILD [OLD_BUILD]
#   bash tools/bench_startup.sh /tmp/roberta-bench/base 12 build /tmp/base-src/build
set -euo pipefail
model=${1:?model folder}
rounds=${2:-10}
new=${3:-build}
old=${4:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "Hello world, this is a test." > "$tmp/one.txt"
uptime
sides=(new)
[ -n "$old" ] && sides=(old new)
for dtype in bf16 int8 fp32; do
  for ((r = 0; r < rounds; ++r)); do
    # alternate which build goes first, so that neither always runs in the other's wake
    order=("${sides[@]}")
    if ((r % 2)) && [ -n "$old" ]; then order=(new old); fi
    for side in "${order[@]}"; do
      bin="$new/roberta"
      [ "$side" = old ] && bin="$old/roberta"
      start=$(date +%s%N)
      "$bin" embed --model "$model" --dtype "$dtype" "$tmp/one.txt" > /dev/null
      end=$(date +%s%N)
      echo "$dtype $side $r $(((end - start) / 1000))" >> "$tmp/times"
    done
  done
done
/usr/bin/python3 - "$tmp/times" <<'PY'
import collections, statistics, sys
t = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    dtype, side, r, us = line.split()
    t[(dtype, side)][int(r)] = int(us) / 1000
for dtype in ("bf16", "int8", "fp32"):
    new = t[(dtype, "new")]
    line = f"{dtype}: median {statistics.median(new.values()):.0f} ms [{min(new.values()):.0f}, {max(new.values()):.0f}]"
    if (dtype, "old") in t:
        old = t[(dtype, "old")]
        line += (f"; old {statistics.median(old.values()):.0f} ms [{min(old.values()):.0f}, {max(old.values()):.0f}]"
                 f"; new/old paired median {statistics.median(new[r] / old[r] for r in new):.3f}")
    print(line)
PY
