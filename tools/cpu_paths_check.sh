#!/usr/bin/env bash
# Every per-CPU choice of the engine (the table in src/runtime/cpu.h; docs/performance.md has the
# measurements behind each row) checked on this machine in one run: what runs here, the tests of
# the kernels it picks (oneDNN's products, attention, the GEMMs), the held-out accuracy of bf16 and
# int8 on the paths chosen here, then interleaved A/B runs of each choice against its alternative and
# the comparison with ONNX Runtime. Meant for the first session on a new kind of CPU (first run in
# full on an Intel Xeon with AMX on 2026-11-25; on an AMD EPYC Zen 4 on 2026-11-28, its last step,
# bench_compare.sh, run on its own: docs/performance.md).
# Not part of CI; ~30-40 minutes.
# Usage: bash tools/cpu_paths_check.sh [BUILD_DIR=build] [MODEL_DIR=/tmp/roberta-bench/base]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
model=${2:-${TMPDIR:-/tmp}/roberta-bench/base}
roberta=$build/roberta
section() { printf '\n== %s\n' "$*"; }
section "CPU"
lscpu | sed -n 's/^Model name: *//p'
grep -o -w -E 'avx2|avx_vnni|avx512f|avx512_bf16|avx512_vnni|avx512_fp16|amx_tile|amx_bf16|amx_int8' /proc/cpuinfo |
  sort -u | tr '\n' ' '
echo
uptime
[ -f "$model/config.json" ] || /usr/bin/python3 tools/make_test_model.py --out "$model" --preset base --seed 0 --no-lm-head > /dev/null
section "what runs here (roberta info)"
"$roberta" info --model "$model" | grep -E 'cpu|default dtype|matrix products|attention'
section "kernel tests on this CPU (oneDNN products, attention, GEMMs incl. our AMX ones, fixture parity)"
"$build/tests/engine_tests" --gtest_brief=1 \
  --gtest_filter='OneDnnGemm*:Precisions/OneDnnGemm.*:Attention.*:PackedGemm*:BlockSplit.*:FixtureParity.*'
section "held-out accuracy of bf16 and int8 on the paths chosen here"
(cd "$build" && ctest --output-on-failure -R 'demo_heldout')
for f in "$build"/demo-heldout*/bf16.json "$build"/demo-heldout*/int8.json; do
  echo "$f: $(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("top-1 agreement %.2f%%, last-hidden cosine mean %.5f" % (100*d["top1_agreement_with_fp32"], d["last_hidden_cosine_mean"]))' "$f")"
done
section "product rates: our kernels (AMX where the CPU has it), our AVX-512 ones, oneDNN's (2 threads)"
# Our own AMX kernels (src/kernels/amx_gemm.h): the engine tests above (PackedGemm*Amx*) check
# the hardware tiles against their emulation first.
"$build/roberta-kernel-bench" --threads=2 \
  --benchmark_filter='(PackedLinear|OneDnnLinear)(|F32|Bf16|Int8)/M:(16|128|1024)/N:3072' 2>&1 | grep -E '^BM_'
echo "-- the same held to AVX512-BF16 / VNNI (ROBERTA_ISA=avx512bf16)"
ROBERTA_ISA=avx512bf16 "$build/roberta-kernel-bench" --threads=2 \
  --benchmark_filter='PackedLinear(Bf16|Int8)/M:(16|128|1024)/N:3072' 2>&1 | grep -E '^BM_'
section "A/B: each choice against its alternative (B's speed relative to A's)"
for dtype in bf16 int8; do
  if grep -q -w amx_tile /proc/cpuinfo; then
    echo "-- $dtype: our AVX-512 kernels (A, ROBERTA_ISA=avx512bf16) vs our AMX kernels (B)"
    DTYPE=$dtype A_ENV="ROBERTA_GEMM=own ROBERTA_ISA=avx512bf16" B_ENV=ROBERTA_GEMM=own \
      bash tools/bench_ab.sh "$roberta" "$roberta" "$model" 3 2 | tail -4
  fi
  echo "-- $dtype: own kernels (A; AMX where the CPU has it) vs oneDNN (B)"
  DTYPE=$dtype A_ENV=ROBERTA_GEMM=own B_ENV=ROBERTA_GEMM=onednn bash tools/bench_ab.sh "$roberta" "$roberta" "$model" 3 2 | tail -4
  echo "-- $dtype: oneDNN held below AMX (A, DNNL_MAX_CPU_ISA=AVX512_CORE_BF16) vs oneDNN unrestricted (B)"
  DTYPE=$dtype A_ENV="ROBERTA_GEMM=onednn DNNL_MAX_CPU_ISA=AVX512_CORE_BF16" B_ENV=ROBERTA_GEMM=onednn \
    bash tools/bench_ab.sh "$roberta" "$roberta" "$model" 3 2 | tail -4
  echo "-- $dtype: attention in fp32 (A) vs bf16 (B; on the AMX tiles where the CPU has them)"
  DTYPE=$dtype A_ENV=ROBERTA_ATTENTION=fp32 B_ENV=ROBERTA_ATTENTION=bf16 bash tools/bench_ab.sh "$roberta" "$roberta" "$model" 3 2 | tail -4
done
# fp32 stays on our kernels everywhere (measured on the Zen 4 only); oneDNN's fp32 brgemm ran at
# 85-91% of the Xeon's full-width FMA peak (../shared/NOTES.md), so measure it there too.
echo "-- fp32: own kernels (A) vs oneDNN (B)"
DTYPE=fp32 A_ENV=ROBERTA_GEMM=own B_ENV=ROBERTA_GEMM=onednn bash tools/bench_ab.sh "$roberta" "$roberta" "$model" 3 2 | tail -4
# The register blocks' rows: a column of the table (src/runtime/cpu.h).
echo "-- fp32: our AVX-512 kernel's 8 x 32 register blocks (A) vs 12 x 32 (B)"
DTYPE=fp32 A_ENV=ROBERTA_FP32_ROWS=8 B_ENV=ROBERTA_FP32_ROWS=12 \
  bash tools/bench_ab.sh "$roberta" "$roberta" "$model" 3 2 | tail -4
# The panel prefetch (src/kernels/gemm/x86_blocks.h, PanelPrefetch), a column of the table.
# W1 is where it shows: a product of 16 rows is bound by reading the weights.
echo "-- fp32: the panel prefetch ahead (A) vs next (B)"
DTYPE=fp32 WORKLOADS="W1 W3 W4" A_ENV=ROBERTA_PREFETCH=ahead B_ENV=ROBERTA_PREFETCH=next \
  bash tools/bench_ab.sh "$roberta" "$roberta" "$model" 3 2 | tail -4
echo "-- bf16 on our kernels (ROBERTA_GEMM=own): the panel prefetch ahead (A) vs next (B)"
DTYPE=bf16 WORKLOADS="W1 W3 W4" A_ENV="ROBERTA_GEMM=own ROBERTA_PREFETCH=ahead" \
  B_ENV="ROBERTA_GEMM=own ROBERTA_PREFETCH=next" bash tools/bench_ab.sh "$roberta" "$roberta" "$model" 3 2 | tail -4
# The int8 kernels below AMX (src/kernels/panel_prefetch.h) follow the same column: the next slice,
# or none of their own ("ahead": the hardware prefetcher). An AMX CPU is held to AVX512-VNNI.
int8_isa=
grep -q -w amx_tile /proc/cpuinfo && int8_isa=ROBERTA_ISA=avx512vnni
echo "-- int8 below AMX${int8_isa:+ ($int8_isa)}: the panel prefetch ahead, i.e. none (A) vs next (B)"
DTYPE=int8 WORKLOADS="W1 W2 W3 W5" A_ENV="$int8_isa ROBERTA_PREFETCH=ahead" B_ENV="$int8_isa ROBERTA_PREFETCH=next" \
  bash tools/bench_ab.sh "$roberta" "$roberta" "$model" 3 2 | tail -5
section "against ONNX Runtime and PyTorch"
bash tools/bench_compare.sh "$model" 2 5 3
