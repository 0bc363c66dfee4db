#pragma once
// The instruction-set levels the kernels are written for, lowest first within each architecture.
// Each level includes the ones before it of its architecture, except avxvnni: CPUs with AVX-512
// rank above it whether or not they have AVX-VNNI (some do not), so code for AVX-VNNI asks
// KernelPlan::avx_vnni, not the level. The 64-bit ARM levels sit below x86-64's so that tests
// like `isa >= Isa::kAvx2` (some outside any `#if`) are false on ARM; ARM levels are compared
// only within `#if defined(__aarch64__)` or through is_arm_level. Which CPUs have which level:
// docs/environment.md, docs/arm64.md.
//
//   x86-64:
//   amx         AVX512-BF16 plus AMX-TILE, AMX-INT8 and AMX-BF16, granted by Linux to the process
//   avx512bf16  AVX512-BF16 and AVX512-VNNI
//   avx512vnni  AVX-512 with VNNI
//   avx512      AVX512F and BW without VNNI
//   avxvnni     AVX2 and FMA plus the VEX-encoded vpdpbusd
//   avx2        AVX2 and FMA
//   64-bit ARM:
//   bf16        BF16 (bfdot, bfmmla) with I8MM and the dot product
//   i8mm        I8MM (smmla, usmmla, usdot) with the dot product
//   dotprod     the dot product (sdot, udot: ASIMDDP)
//   neon        Advanced SIMD (every 64-bit ARM CPU)
//   both:
//   portable    plain C++ (any CPU, any architecture)
namespace roberta::runtime {

enum class Isa {
  kPortable,
  kNeon, kDotProd, kI8mm, kArmBf16,                             // 64-bit ARM
  kAvx2, kAvxVnni, kAvx512, kAvx512Vnni, kAvx512Bf16, kAmx  // x86-64
};

// "portable", "neon", "dotprod", "i8mm", "bf16", "avx2", "avxvnni", "avx512", "avx512vnni",
// "avx512bf16", "amx"
const char* isa_name(Isa isa);
// Whether `isa` is one of 64-bit ARM's levels (neon to bf16).
constexpr bool is_arm_level(Isa isa) { return isa >= Isa::kNeon && isa <= Isa::kArmBf16; }

}  // namespace roberta::runtime
