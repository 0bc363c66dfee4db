#pragma once
// The kernel plan: every choice the kernels make about this CPU, made once from its features
// (runtime/cpu.h), its CPU model's row of the choices table and the ROBERTA_* settings
// (runtime/settings.h). Kernels read the plan; nothing below src/runtime asks cpuid or the
// environment.
//
//   const runtime::KernelPlan& p = runtime::plan();   // this process's (made at first use)
//   if (p.isa >= Isa::kAvx512) ...                    // the level the kernels may use
//   runtime::resolve(features, settings)              // any other CPU or settings (tests)
#include <cstddef>

#include "runtime/cpu.h"
#include "runtime/settings.h"

namespace roberta::runtime {

struct KernelPlan {
  CpuMatch row;                  // the CPU model's row of the choices table
  Isa detected;                  // the highest level the CPU has
  Isa isa;                       // the level the kernels use: detected, capped by ROBERTA_ISA
  bool avx_vnni;                 // the int8 product may use AVX-VNNI: isa >= avxvnni and the CPU has it
  bool amx_bf16, amx_int8;       // the CPU has AMX tiles for bf16 / int8 (granted or not; for oneDNN)
  size_t fp32_block_rows;        // 8 or 12: rows of the AVX-512 fp32 blocks in products of > 32 rows
  bool prefetch_next;            // panels a k slice ahead per row chunk, else a distance ahead per block
  Settings::Gemm gemm;           // ROBERTA_GEMM as given; kernels/onednn_gemm.h applies it per precision
  bool bf16_onednn;              // by default, bf16 products through oneDNN where it has native bf16
  bool bf16_attention;           // attention in bf16 for the bf16 and int8 encoders
  bool int8_fused_epilogue;      // the AVX512-VNNI int8 product applies GELU and writes bf16
  Settings settings;             // what the environment asked for (so a description can say why)
};

// The plan for a CPU with `cpu`'s features under `settings`.
KernelPlan resolve(const CpuFeatures& cpu, const Settings& settings);
// This process's: resolve(detect(), from_env()), made once. Throws roberta::Error for a bad
// ROBERTA_* value (and again at each later call, until the environment is fixed).
const KernelPlan& plan();

}  // namespace roberta::runtime
