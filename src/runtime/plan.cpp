#include "runtime/plan.h"

#include <algorithm>
#include <string>

#include "roberta/error.h"

namespace roberta::runtime {

namespace {
// A ROBERTA_ISA level of the other architecture than the CPU's is an error, not a silent cap (an
// ARM level would cap an x86-64 CPU to the portable kernels, an x86-64 level would not cap an ARM
// one at all).
void check_architecture(const CpuFeatures& cpu, Isa wanted) {
  // (An ARM CPU is known by its extensions, from Linux, the one ARM system the build supports; the
  // tests describe CPUs of either architecture to this function on both.)
  const bool arm_cpu = cpu.arm.asimd;
  if (wanted == Isa::kPortable || is_arm_level(wanted) == arm_cpu) return;
  throw Error(std::string("ROBERTA_ISA=\"") + isa_name(wanted) + "\" is a level of " +
              (arm_cpu ? "x86-64" : "64-bit ARM") + ", and this CPU is " + (arm_cpu ? "64-bit ARM" : "x86-64") +
              ": use one of " + (arm_cpu ? "bf16, i8mm, dotprod, neon, portable" :
                                           "amx, avx512bf16, avx512vnni, avx512, avxvnni, avx2, portable"));
}
}  // namespace

KernelPlan resolve(const CpuFeatures& cpu, const Settings& settings) {
  if (settings.isa) check_architecture(cpu, *settings.isa);
  KernelPlan p{};
  p.row = choices_for(cpu);
  const CpuChoices& row = *p.row.choices;
  p.detected = cpu.isa;
  p.isa = settings.isa ? std::min(*settings.isa, cpu.isa) : cpu.isa;
  p.avx_vnni = p.isa >= Isa::kAvxVnni && cpu.avx_vnni;
  p.amx_bf16 = cpu.amx_bf16;
  p.amx_int8 = cpu.amx_int8;
  p.fp32_block_rows = settings.fp32_rows ? settings.fp32_rows : row.fp32_block_rows;
  p.prefetch_next = settings.prefetch_next.value_or(row.prefetch_next_slice);
  p.gemm = settings.gemm;
  // Not under a ROBERTA_ISA cap, which exists to test our own lower paths.
  p.bf16_onednn = row.bf16_onednn && p.isa == p.detected;
  // With AMX tiles attention is bf16 anyway; below AVX512-BF16 it cannot be.
  p.bf16_attention =
      p.isa >= Isa::kAvx512Bf16 && settings.bf16_attention.value_or(p.isa >= Isa::kAmx || row.bf16_attention);
  p.int8_fused_epilogue = p.isa >= Isa::kAvx512Bf16 && row.int8_fused_epilogue;
  p.settings = settings;
  return p;
}

const KernelPlan& plan() {
  static const KernelPlan p = resolve(detect(), from_env());
  return p;
}

}  // namespace roberta::runtime
