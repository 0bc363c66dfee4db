#pragma once
// The CPU this process runs on, as cpuid (x86-64) or MIDR_EL1 and Linux's hardware capabilities
// (64-bit ARM) tell it: its model and its instruction sets, read once; and the kernel choices made
// for each CPU model: one table, one row per CPU model
// measured (docs/performance.md, "Kernel choices per CPU", has the measurement behind each entry).
// A CPU the table does not know gets the row of the closest known one, and says so (`roberta info`).
//
//   const runtime::CpuMatch& m = runtime::this_cpu();
//   m.choices->fp32_block_rows     // 12 on a Zen 5
//   m.exact                        // false on, say, a Zen 3 (it takes the Zen 4's row)
#include <cstddef>
#include <span>
#include <string>

#include "runtime/isa.h"

namespace roberta::runtime {

// 64-bit ARM: the instruction-set extensions Linux reports (getauxval AT_HWCAP / AT_HWCAP2).
struct ArmFeatures {
  bool asimd = false;      // Advanced SIMD (NEON)
  bool dotprod = false;    // SDOT / UDOT (ASIMDDP)
  bool i8mm = false;       // SMMLA / USMMLA / USDOT
  bool bf16 = false;       // BFDOT / BFMMLA
  bool sve = false, sve2 = false;
  unsigned sve_bits = 0;   // the SVE vector length (0 without SVE)
};

struct CpuFeatures {
  std::string vendor;         // "AuthenticAMD", "GenuineIntel"; on ARM the implementer ("Arm", "Apple",
                              // ...); "" where neither cpuid nor MIDR_EL1 can be read
  unsigned family = 0;        // as Linux reports it: base family, plus the extended one for 15; on ARM
                              // the implementer code (MIDR_EL1)
  unsigned model = 0;         // with the extended model for families 6 and 15 and up; on ARM the part
                              // number (MIDR_EL1)
  std::string brand;          // "AMD EPYC 9B45 ...": the processor's name string; on ARM the core's
                              // name where the part number is known ("Neoverse N1")
  Isa isa = Isa::kPortable;   // the highest level it has (amx: only once Linux granted the tiles)
  bool avx_vnni = false;      // AVX-VNNI (cpuid leaf 7, sub-leaf 1, EAX bit 4), with AVX2
  bool amx_bf16 = false;      // AMX-TILE with AMX-BF16, granted or not
  bool amx_int8 = false;      // AMX-TILE with AMX-INT8, granted or not
  ArmFeatures arm{};          // 64-bit ARM's extensions (all false on x86)
};

// This process's CPU (read once). On Linux it also asks for the AMX tiles (arch_prctl
// ARCH_REQ_XCOMP_PERM, XTILEDATA), as a process must before its first tile instruction.
const CpuFeatures& detect();

// The ARM extensions named by Linux's AT_HWCAP / AT_HWCAP2 bits (arch/arm64/include/uapi/asm/hwcap.h).
ArmFeatures arm_features_from_hwcaps(unsigned long hwcap, unsigned long hwcap2);
// The kernels' level for those extensions (runtime/isa.h): neon, dotprod, i8mm (with the dot
// product), bf16 (with both); portable without ASIMD. SVE adds no level: no kernel uses it.
Isa arm_level(const ArmFeatures& arm);
// "asimd dotprod i8mm bf16 sve sve2 (SVE 256 bits)", "asimd", or "" (not ARM).
std::string arm_features_text(const ArmFeatures& arm);

// The choices the kernels make by CPU model. The instruction set itself is not one of them: the
// CPU's features decide it (runtime/plan.h).
struct CpuChoices {
  const char* name;         // "AMD Zen 5 (family 26)"
  size_t fp32_block_rows;   // rows of the AVX-512 fp32 register blocks in products of more than
                            // 32 rows (and of bf16 widened to fp32): 8 or 12 (ROBERTA_FP32_ROWS)
  bool prefetch_next_slice; // panels prefetched a k slice ahead by a row chunk's blocks together,
                            // else each block a fixed distance ahead (ROBERTA_PREFETCH)
  bool bf16_onednn;         // bf16 products through oneDNN where it multiplies bf16 natively
                            // without AMX (ROBERTA_GEMM)
  bool bf16_attention;      // attention in bf16 (vdpbf16ps) for the bf16 and int8 encoders, where
                            // the CPU has AVX512-BF16; with AMX tiles it is bf16 anyway
                            // (ROBERTA_ATTENTION)
  bool int8_fused_epilogue; // the AVX512-VNNI int8 product applies GELU in its epilogue and writes
                            // act(intermediate) as bf16 for the output product, where the CPU has
                            // AVX512-BF16 (AMX's product always does; ROBERTA_ISA=avx512vnni turns
                            // it off)
};

// Every row of the table.
std::span<const CpuChoices> cpu_choices_table();

struct CpuMatch {
  const CpuChoices* choices;
  bool exact;  // the table has this CPU's model; else `choices` are the closest known model's
};
// The row for `cpu`: AMD by family (Zen 4 = 25, Zen 5 = 26; older families take the Zen 4's row,
// newer ones the Zen 5's), Intel by model (Xeons with AMX: Sapphire, Emerald and Granite Rapids;
// other models take their row), any ARM CPU the ARM row (no ARM CPU measured yet), any other CPU
// the Intel row.
CpuMatch choices_for(const CpuFeatures& cpu);
// This machine's (once).
const CpuMatch& this_cpu();
// "AMD EPYC 9B45 (AuthenticAMD family 26 model 2): AMD Zen 5 (family 26)", or "...: not in the
// table, the closest known: AMD Zen 4 (family 25)", for `roberta info`.
std::string describe(const CpuFeatures& cpu, const CpuMatch& match);

}  // namespace roberta::runtime
