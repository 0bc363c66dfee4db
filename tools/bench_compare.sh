#!/usr/bin/env bash
# roberta.cpp against ONNX Runtime and PyTorch on workloads W1-W5 (issue 6), interleaved in one run.
# Usage: bash tools/bench_compare.sh [MODEL_DIR] [THREADS] [RUNS] [ROUNDS]
#   MODEL_DIR defaults to a roberta-base-shaped random model made in ${TMPDIR:-/tmp}/roberta-bench.
# Installs onnxruntime-node into a scratch folder (never a project dependency), exports the model
# with tools/export_onnx.py, then for each round runs every workload in roberta.cpp, ORT and
# PyTorch one after the other (and W3 once more in roberta.cpp with --dtype bf16), and prints
# medians over rounds with the ratios and roberta.cpp's peak memory on W3. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=${TMPDIR:-/tmp}/roberta-bench
model=${1:-$scratch/base}
threads=${2:-2}
runs=${3:-5}
rounds=${4:-3}
py=/usr/bin/python3
mkdir -p "$scratch"
[ -f "$model/config.json" ] || "$py" tools/make_test_model.py --out "$model" --preset base --seed 0 --no-lm-head > /dev/null
[ -f "$scratch/model.onnx" ] || "$py" tools/export_onnx.py --model "$model" --out "$scratch/model.onnx" > /dev/null 2>&1
[ -d "$scratch/ort/node_modules/onnxruntime-node" ] ||
  npm install --prefix "$scratch/ort" --ignore-scripts --no-audit --no-fund onnxruntime-node > /dev/null 2>&1
export NODE_PATH="$scratch/ort/node_modules"
declare -A spec=([W1]="--batch 1 --seq 16" [W2]="--batch 1 --seq 128" [W3]="--batch 8 --seq 128"
                 [W4]="--batch 1 --seq 512" [W5]="--batch 32 --lengths uniform:8:128 --seed 0")
results=$(mktemp)
for round in $(seq "$rounds"); do
  for w in W1 W2 W3 W4 W5; do
    ours=$(build/roberta bench --model "$model" ${spec[$w]} --threads "$threads" --runs "$runs" --json)
    lengths=$(echo "$ours" | "$py" -c "import json,sys; print(json.dumps(json.load(sys.stdin)['lengths']))")
    ort=$(node tools/bench_ort.js "$scratch/model.onnx" "$threads" "$runs" "$lengths")
    torch=$(OMP_WAIT_POLICY=PASSIVE OPENBLAS_NUM_THREADS=$threads "$py" tools/bench_torch.py "$model" "$threads" "$runs" "$lengths")
    echo "{\"workload\":\"$w\",\"round\":$round,\"ours\":$ours,\"ort\":$ort,\"torch\":$torch}" >> "$results"
  done
  bf16=$(build/roberta bench --model "$model" ${spec[W3]} --threads "$threads" --runs "$runs" --dtype bf16 --json)
  echo "{\"workload\":\"W3 bf16\",\"round\":$round,\"ours\":$bf16}" >> "$results"
done
"$py" - "$results" "$threads" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"threads {sys.argv[2]}; medians over rounds of per-round medians (ms); tokens counted without padding")
print(f"| workload | tokens | roberta.cpp ms | ONNX Runtime ms | PyTorch ms | vs ORT | vs PyTorch | roberta.cpp tokens/s |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for w in ["W1", "W2", "W3", "W4", "W5"]:
    r = [x for x in rows if x["workload"] == w]
    ours = statistics.median(x["ours"]["median_ms"] for x in r)
    ort = statistics.median(x["ort"]["median_ms"] for x in r)
    pt = statistics.median(x["torch"]["median_ms"] for x in r)
    tokens = r[0]["ours"]["tokens"]
    print(f"| {w} | {tokens} | {ours:.1f} | {ort:.1f} | {pt:.1f} | {ort / ours:.2f}x | {pt / ours:.2f}x | {tokens / ours * 1000:.0f} |")
    if w == "W3":
        b = [x for x in rows if x["workload"] == "W3 bf16"]
        bf = statistics.median(x["ours"]["median_ms"] for x in b)
        print(f"| W3, roberta.cpp --dtype bf16 | {tokens} | {bf:.1f} | {ort:.1f} (fp32) | {pt:.1f} (fp32) | {ort / bf:.2f}x | "
              f"{pt / bf:.2f}x | {tokens / bf * 1000:.0f} |")
w3 = [x for x in rows if x["workload"] == "W3"]
print(f"peak memory of roberta bench on W3: {max(x['ours']['peak_rss_mb'] for x in w3):.0f} MB fp32, "
      f"{max(x['ours']['peak_rss_mb'] for x in rows if x['workload'] == 'W3 bf16'):.0f} MB bf16")
PY
rm -f "$results"
