#!/usr/bin/env bash
# A CPU without AVX-512 (AMD's Zen 2 and 3, Intel's client CPUs), as a proxy on this machine: ours
# and PyTorch both held to AVX2 (ROBERTA_ISA=avx2; ATEN_CPU_CAPABILITY=avx2 and oneDNN's
# ONEDNN_MAX_CPU_ISA=AVX2, its Linear on OpenBLAS's Haswell kernels as OPENBLAS_CORETYPE=Haswell
# sets for both). ONNX Runtime cannot be held below the CPU's instruction set, so it is not in
# this comparison: on a real AVX2 CPU, run tools/bench_compare.sh. Interleaved rounds, medians (ms)
# and the within-round ratios of ours (fp32, int8) against PyTorch fp32.
# Usage: bash tools/bench_avx2_proxy.sh MODEL [ROUNDS=3] [THREADS=2] [RUNS=5]   (from the repository root)
# Environment: WORKLOADS (default "W1 W3 W4 W5"); ROBERTA (default build/roberta).
set -euo pipefail
model=$1 rounds=${2:-3} threads=${3:-2} runs=${4:-5}
bin=${ROBERTA:-build/roberta} py=/usr/bin/python3
export OPENBLAS_CORETYPE=Haswell
declare -A spec=([W1]="--batch 1 --seq 16" [W2]="--batch 1 --seq 128" [W3]="--batch 8 --seq 128"
                 [W4]="--batch 1 --seq 512" [W5]="--batch 32 --lengths uniform:8:128 --seed 0")
read -r -a workloads <<< "${WORKLOADS:-W1 W3 W4 W5}"
for w in "${workloads[@]}"; do
  [ -n "${spec[$w]:-}" ] || { echo "bench_avx2_proxy.sh: unknown workload '$w' in WORKLOADS (W1 .. W5)" >&2; exit 2; }
done
lscpu | sed -n 's/^Model name: *//p'
uptime
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq "$rounds"); do
  for w in "${workloads[@]}"; do
    # shellcheck disable=SC2086
    ours=$(ROBERTA_ISA=avx2 "$bin" bench --model "$model" ${spec[$w]} --threads "$threads" --runs "$runs" --json)
    lengths=$(echo "$ours" | "$py" -c "import json,sys; print(json.dumps(json.load(sys.stdin)['lengths']))")
    torch=$(ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 OMP_WAIT_POLICY=PASSIVE \
            OPENBLAS_NUM_THREADS=$threads "$py" tools/bench_torch.py "$model" "$threads" "$runs" "$lengths")
    # shellcheck disable=SC2086
    int8=$(ROBERTA_ISA=avx2 "$bin" bench --model "$model" ${spec[$w]} --threads "$threads" --runs "$runs" \
           --dtype int8 --json)
    echo "{\"workload\":\"$w\",\"ours\":$ours,\"int8\":$int8,\"torch\":$torch}" >> "$results"
  done
done
"$py" - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print("| workload | tokens | PyTorch fp32 | ours fp32 | ours int8 | fp32 vs PyTorch | int8 vs PyTorch |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for w in dict.fromkeys(r["workload"] for r in rows):
    r = [x for x in rows if x["workload"] == w]
    m = {k: statistics.median(x[k]["median_ms"] for x in r) for k in ("torch", "ours", "int8")}
    ratio = lambda k: statistics.median(x["torch"]["median_ms"] / x[k]["median_ms"] for x in r)
    print(f"| {w} | {r[0]['ours']['tokens']} | {m['torch']:.1f} | {m['ours']:.1f} | {m['int8']:.1f} | "
          f"{ratio('ours'):.2f}x | {ratio('int8'):.2f}x |")
print("(ratios: medians over the rounds of PyTorch's time over ours, each of ours next to PyTorch in its round)")
PY
