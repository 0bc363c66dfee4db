#include "runtime/plan.h"

#include <algorithm>

namespace roberta::runtime {

KernelPlan resolve(const CpuFeatures& cpu, const Settings& settings) {
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
