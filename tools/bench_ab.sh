#!/usr/bin/env bash
# Two builds of `roberta` on the same workloads, interleaved (A, B, B, A, ...), medians of the
# per-round medians, and B's speed relative to A's two ways: the ratio of those medians, and the
# median of the per-round ratios (A and B run back to back, so both see the machine in the same
# state: the shared Zen 4 machine flips for minutes at a time between a fast and a slow state,
# ~10% apart on int8 W3, and a median over rounds can compare A's fast rounds with B's slow ones).
# For checking that a change is not slower.
# Usage: bash tools/bench_ab.sh BIN_A BIN_B MODEL [ROUNDS=3] [THREADS=2]
#   W1 batch 1 x 16, W2 1 x 128, W3 batch 8 x 128, W4 1 x 512, W5 batch 32 with lengths uniform 8..128 (seed 0);
#   long sequences (a model with max_position_embeddings above them): L2K 1 x 2048, L8K 1 x 8192
# Environment: DTYPE (--dtype of both, default fp32); WORKLOADS (default "W1 W3 W5"); A_ENV, B_ENV:
#   variables for one side, e.g.
#   DTYPE=bf16 A_ENV=ROBERTA_GEMM=own B_ENV=ROBERTA_GEMM=onednn bash tools/bench_ab.sh build/roberta build/roberta MODEL
set -euo pipefail
a=$1 b=$2 model=$3 rounds=${4:-3} threads=${5:-2}
dtype=${DTYPE:-fp32}
read -r -a workloads <<< "${WORKLOADS:-W1 W3 W5}"
declare -A args=([W1]="--batch 1 --seq 16 --runs 20" [W2]="--batch 1 --seq 128 --runs 10"
                 [W3]="--batch 8 --seq 128 --runs 5"
                 [W4]="--batch 1 --seq 512 --runs 5" [W5]="--batch 32 --lengths uniform:8:128 --seed 0 --runs 5"
                 [L2K]="--batch 1 --seq 2048 --runs 3" [L8K]="--batch 1 --seq 8192 --runs 2")
for w in "${workloads[@]}"; do
  [ -n "${args[$w]:-}" ] ||
    { echo "bench_ab.sh: unknown workload '$w' in WORKLOADS (W1 .. W5, L2K, L8K)" >&2; exit 2; }
done
lscpu | sed -n 's/^Model name: *//p'
uptime
tmp=$(mktemp -d)
for r in $(seq "$rounds"); do
  for w in "${workloads[@]}"; do
    order="a b"
    [ $((r % 2)) = 0 ] && order="b a"  # alternate who goes first
    for side in $order; do
      bin=${!side}
      side_env=A_ENV
      [ "$side" = b ] && side_env=B_ENV
      # shellcheck disable=SC2086
      env ${!side_env:-} "$bin" bench --model "$model" --threads "$threads" --dtype "$dtype" ${args[$w]} --json |
        /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])' >> "$tmp/$w.$side"
    done
  done
done
/usr/bin/python3 - "$tmp" "${workloads[@]}" <<'PY'
import statistics, sys
d = sys.argv[1]
print(f"{'workload':8} {'A ms':>9} {'B ms':>9} {'B vs A':>8} {'paired':>8}")
for w in sys.argv[2:]:
    ra = [float(x) for x in open(f"{d}/{w}.a")]
    rb = [float(x) for x in open(f"{d}/{w}.b")]
    a, b = statistics.median(ra), statistics.median(rb)
    paired = statistics.median(x / y for x, y in zip(ra, rb))
    print(f"{w:8} {a:9.2f} {b:9.2f} {a / b:7.3f}x {paired:7.3f}x")
PY
rm -rf "$tmp"
