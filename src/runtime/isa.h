#pragma once
// The instruction-set levels the x86-64 kernels are written for, lowest first. Each level includes
// the ones before it, except avxvnni: CPUs with AVX-512 rank above it whether or not they have
// AVX-VNNI (some do not), so code for AVX-VNNI asks KernelPlan::avx_vnni, not the level. Which CPUs
// have which level: docs/environment.md.
//
//   amx         AVX512-BF16 plus AMX-TILE, AMX-INT8 and AMX-BF16, granted by Linux to the process
//   avx512bf16  AVX512-BF16 and AVX512-VNNI
//   avx512vnni  AVX-512 with VNNI
//   avx512      AVX512F and BW without VNNI
//   avxvnni     AVX2 and FMA plus the VEX-encoded vpdpbusd
//   avx2        AVX2 and FMA
//   portable    plain C++ (any CPU, any architecture)
namespace roberta::runtime {

enum class Isa { kPortable, kAvx2, kAvxVnni, kAvx512, kAvx512Vnni, kAvx512Bf16, kAmx };

// "portable", "avx2", "avxvnni", "avx512", "avx512vnni", "avx512bf16", "amx"
const char* isa_name(Isa isa);

}  // namespace roberta::runtime
