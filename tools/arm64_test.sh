#!/usr/bin/env bash
# 64-bit ARM without ARM hardware: cross-compiles the library, the `roberta` program and the test
# programs for aarch64 (cmake/aarch64-linux-gnu.cmake) and runs them under qemu-aarch64, on several
# emulated CPUs. Run as root on x86-64 Debian 12 with ../shared beside the repository:
#
#   bash tools/arm64_test.sh            # what CI runs (tools/test.sh calls it)
#
# What runs (docs/arm64.md says why this subset):
#   - `roberta info` on each emulated CPU: the extensions it reports must be the CPU model's, and
#     the level and kernels those extensions call for;
#   - the kernel tests (GEMM in fp32/bf16/int8, attention, LayerNorm, activations, fixture parity)
#     on `max` (every extension: the I8MM and BF16 kernels), the GEMM ones on neoverse-n1 (the sdot
#     kernel) and cortex-a72 (NEON only), and under ROBERTA_ISA=portable;
#   - the PyTorch parity of whole models (`roberta compare`, tests/parity/run_parity.sh --quick);
#   - fill-mask on the demo model, compared with the x86-64 build's output when there is one.
# The emulator says nothing about speed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --arm64
build=${ROBERTA_ARM64_BUILD:-build-arm64}
cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DROBERTA_BUILD_PYTHON=OFF \
  -DROBERTA_ONEDNN=OFF > "$build.configure.log" || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j2 --target roberta_cli engine_tests tokenizer_tests
roberta="$build/roberta"
aarch64-linux-gnu-readelf -h "$roberta" | grep -q "Machine: *AArch64" || { echo "$roberta is not an aarch64 program"; exit 1; }
failures=0
fail() { echo "FAIL  $*"; failures=$((failures + 1)); }

# The extensions of QEMU's CPU models (target/arm/cpu64.c): cortex-a72 is ARMv8.0 (NEON only),
# neoverse-n1 ARMv8.2 with the dot product, a64fx SVE with 512-bit vectors, max everything.
declare -A want=([cortex-a72]="asimd" [neoverse-n1]="asimd dotprod" [a64fx]="asimd sve (SVE 512 bits)"
                 [max]="asimd dotprod i8mm bf16 sve sve2")
# ... and the level and the products' kernels that follow (runtime/isa.h; SVE adds no level)
declare -A level=([cortex-a72]=neon [neoverse-n1]=dotprod [a64fx]=neon [max]=bf16)
declare -A int8=([cortex-a72]=portable [neoverse-n1]=NEON-SDOT [a64fx]=portable [max]=NEON-I8MM)
declare -A bf16=([cortex-a72]="widened to fp32, neon" [neoverse-n1]="widened to fp32, neon"
                 [a64fx]="widened to fp32, neon" [max]=NEON-BF16)
for cpu in cortex-a72 neoverse-n1 a64fx max; do
  info=$(QEMU_CPU=$cpu qemu-aarch64 "$roberta" info)
  line=$(grep '^instruction set' <<< "$info")
  products=$(grep '^matrix products' <<< "$info")
  # max's SVE length is the emulator's default; the test asks only that one is named
  if grep -q "^instruction set *${level[$cpu]} (64-bit ARM with ${want[$cpu]}[ ;()]" <<< "$line"; then
    echo "ok    info on $cpu: $line"
  else fail "info on $cpu: want level ${level[$cpu]} with '${want[$cpu]}', got: $line"; fi
  if grep -qF "fp32: own (neon, 6 x 16 blocks); bf16: own (${bf16[$cpu]}); int8: own (${int8[$cpu]})" <<< "$products"
  then echo "ok    kernels on $cpu: $products"
  else fail "kernels on $cpu: want int8 ${int8[$cpu]}, bf16 ${bf16[$cpu]}, got: $products"; fi
done
grep '^cpu ' <<< "$(QEMU_CPU=neoverse-n1 qemu-aarch64 "$roberta" info)" | grep -q "Neoverse N1 (Arm part 0xd0c)" \
  || fail "neoverse-n1 not named: $(QEMU_CPU=neoverse-n1 qemu-aarch64 "$roberta" info | grep '^cpu ')"

# (but for bf16 on 64 large shapes, minutes emulated: the block edges of the bf16 kernels have a
# test of their own, PackedGemmBf16.BlockEdges*; and the GEMM loop's callbacks and fused GELU,
# whose code is the same on either architecture)
kernels='PackedGemm*:Attention.*:LayerNorm.*:HuggingFaceNames/ActivationTest.*:FixtureParity.*:Isa.*:CpuChoices.*'
kernels+=':KernelPlan.*:Settings.*-PackedGemmBf16.MatchesFloat64ReferenceOfBf16RoundedInputs'
kernels+=':PackedGemm.RowsDoneAndTilesDoneSeeFinalValuesOnce:PackedGemm.FusedActivationEqualsSeparatePass'
products='PackedGemm.MatchesFloat64Reference:PackedGemmBf16.BlockEdges*:Isa.*'
int8='PackedGemmInt8.MatchesFloat64ReferenceOfQuantizedInputs'
# (cortex-a72: fp32 on NEON, bf16 widened on NEON, int8 portable)
quick="$products:$int8:LayerNorm.*:Attention.MatchesFloat64Reference:Attention.PaddingDoesNotEnterTheRowMaximum"
# Two emulators at once (each keeps about one core busy): the kernel set on max in the background,
# beside the other CPUs' sets; its output follows theirs.
max_log="$build/kernels-on-max.log"
QEMU_CPU=max qemu-aarch64 "$build/tests/engine_tests" --gtest_brief=1 --gtest_filter="$kernels" > "$max_log" 2>&1 &
max_pid=$!
QEMU_CPU=neoverse-n1 qemu-aarch64 "$build/tests/engine_tests" --gtest_brief=1 \
  --gtest_filter="$int8:PackedGemmInt8.ExtremeBytesDoNotSaturate:Isa.*" || fail "int8 kernels on neoverse-n1"
QEMU_CPU=cortex-a72 qemu-aarch64 "$build/tests/engine_tests" --gtest_brief=1 --gtest_filter="$quick" \
  || fail "kernels on cortex-a72"
# (the products and attention: LayerNorm's code is the same at every level on ARM)
QEMU_CPU=max ROBERTA_ISA=portable qemu-aarch64 "$build/tests/engine_tests" --gtest_brief=1 \
  --gtest_filter="$products:Attention.MatchesFloat64Reference" || fail "portable kernels on max"
# (but for the whole-corpus id streams and the every-code-point table checks: minutes emulated, and
# the same table lookups on either architecture)
QEMU_CPU=max qemu-aarch64 "$build/tests/tokenizer_tests" --gtest_brief=1 --gtest_filter='-Corpus.*:*OfEveryCodePoint' \
  || fail "tokenizer tests on max"
max_status=0
wait "$max_pid" || max_status=$?
echo "== the kernel set on max:"
cat "$max_log"
[ "$max_status" -eq 0 ] || fail "kernels on max"

# Whole models against PyTorch: the parity script with the ARM program behind the emulator.
wrapper="$build/roberta-under-qemu"
printf '#!/bin/sh\nQEMU_CPU=max exec qemu-aarch64 %s "$@"\n' "$(realpath "$roberta")" > "$wrapper"
chmod +x "$wrapper"
bash tests/parity/run_parity.sh "$wrapper" "$build/parity" --quick || fail "PyTorch parity"

text="She opened the <mask> and looked out into the garden."
arm_out=$("$wrapper" fill-mask --dtype fp32 "$text")
echo "$arm_out"
if [ -x build/roberta ]; then
  [ "$arm_out" = "$(build/roberta fill-mask --dtype fp32 "$text")" ] && echo "ok    fill-mask as on x86-64" \
    || fail "fill-mask differs from the x86-64 build's"
fi
if ((failures)); then echo "$failures ARM check(s) failed"; exit 1; fi
echo "ARM checks passed"
