#!/usr/bin/env bash
# A CPU without AVX-512 (AMD's Zen 2 and 3, Intel's client CPUs), as a proxy on this machine: ours
# and PyTorch both held to AVX2 (ROBERTA_ISA=avx2; ATEN_CPU_CAPABILITY=avx2 and oneDNN's
# ONEDNN_MAX_CPU_ISA=AVX2, its Linear on OpenBLAS's Haswell kernels as OPENBLAS_CORETYPE=Haswell
# sets for both). ONNX Runtime cannot be held below the CPU's instruction set, so it is not in
# this comparison: on a real AVX2 CPU, run tools/bench_compare.sh. Where the CPU has AVX-VNNI
# (Intel's since Alder Lake, this Xeon too), ours int8 held to it as well (ROBERTA_ISA=avxvnni: the
# int8 product on AVX-VNNI, everything else on the AVX2 paths). Interleaved rounds, medians (ms)
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
[ ${#workloads[@]} -gt 0 ] || { echo "bench_avx2_proxy.sh: WORKLOADS is empty" >&2; exit 2; }
for w in "${workloads[@]}"; do
  [ -n "${spec[$w]:-}" ] || { echo "bench_avx2_proxy.sh: unknown workload '$w' in WORKLOADS (W1 .. W5)" >&2; exit 2; }
done
lscpu | sed -n 's/^Model name: *//p'
uptime
# The AVX-VNNI column where this binary runs its AVX-VNNI kernel here (the CPU has it, the build too).
info=$(ROBERTA_ISA=avxvnni "$bin" info --model "$model")
vnni=$(grep -q 'int8: own (AVX-VNNI' <<< "$info" && echo 1 || echo 0)
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
    vnni_int8=null
    # shellcheck disable=SC2086
    [ "$vnni" = 1 ] && vnni_int8=$(ROBERTA_ISA=avxvnni "$bin" bench --model "$model" ${spec[$w]} --threads "$threads" \
                                   --runs "$runs" --dtype int8 --json)
    echo "{\"workload\":\"$w\",\"ours\":$ours,\"int8\":$int8,\"vnni\":$vnni_int8,\"torch\":$torch}" >> "$results"
  done
done
"$py" - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
vnni = rows[0]["vnni"] is not None
head = ["PyTorch fp32", "ours fp32", "ours int8"] + (["ours int8 AVX-VNNI"] if vnni else [])
keys = ["ours", "int8"] + (["vnni"] if vnni else [])
print("| workload | tokens | " + " | ".join(head) + " | " + " | ".join(f"{h} vs PyTorch" for h in head[1:]) + " |")
print("| --- | ---: |" + " ---: |" * (2 * len(head) - 1))
for w in dict.fromkeys(r["workload"] for r in rows):
    r = [x for x in rows if x["workload"] == w]
    m = {k: statistics.median(x[k]["median_ms"] for x in r) for k in ["torch"] + keys}
    ratio = lambda k: statistics.median(x["torch"]["median_ms"] / x[k]["median_ms"] for x in r)
    print(f"| {w} | {r[0]['ours']['tokens']} | " + " | ".join(f"{m[k]:.1f}" for k in ["torch"] + keys) + " | "
          + " | ".join(f"{ratio(k):.2f}x" for k in keys) + " |")
print("(ratios: medians over the rounds of PyTorch's time over ours, each of ours next to PyTorch in its round)")
PY
