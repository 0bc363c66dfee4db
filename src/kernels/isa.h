#pragma once
// Which instruction sets the kernels may use on this CPU. Detected once with cpuid; the
// ROBERTA_ISA environment variable caps the choice, so that every lower path can be tested on
// one machine:
//
//   ROBERTA_ISA=avx2 ./build/roberta fill-mask ...    // the AVX2 GEMM, the portable bf16 product
//
// Accepted values, highest first: amx, avx512bf16, avx512vnni, avx512, avxvnni, avx2, portable. Any
// other value is an error (roberta::Error naming the accepted ones) the first time a kernel asks.
// amx: AVX512-BF16 plus the AMX tiles (AMX-TILE, AMX-INT8, AMX-BF16), which Linux must also have
// granted the process. avx512bf16 (Cooper Lake, AMD's Zen 4 and 5): AVX512-BF16 and AVX512-VNNI.
// avx512vnni (Cascade Lake, Ice Lake): AVX-512 with VNNI. avx512 (Skylake-SP): AVX512F and BW,
// without VNNI. avxvnni: AVX2 plus AVX-VNNI (the VEX-encoded vpdpbusd of Intel's CPUs since Alder
// Lake, with or without AVX-512; only the int8 product uses it, where the CPU has it: a CPU with
// AVX-512 but without AVX-VNNI held to avxvnni runs the avx2 paths).
#include <optional>
#include <string_view>

namespace roberta::kernels {

// Each level includes the ones before, but for avxvnni: CPUs with AVX-512 detect above it whether or
// not they have AVX-VNNI (Ice Lake and AMD's Zen 4 do not), so code for AVX-VNNI asks
// avx_vnni_usable(), not the level alone.
enum class Isa { kPortable, kAvx2, kAvxVnni, kAvx512, kAvx512Vnni, kAvx512Bf16, kAmx };

// "portable", "avx2", "avxvnni", "avx512", "avx512vnni", "avx512bf16", "amx"
const char* isa_name(Isa isa);
// The level named by a ROBERTA_ISA value; throws roberta::Error for an unknown value.
Isa parse_isa(std::string_view value);
// What this CPU supports (cpuid, and for amx the kernel's grant), ignoring ROBERTA_ISA.
Isa detected_isa();
// Whether the CPU has AMX-TILE, AMX-INT8 and AMX-BF16 and Linux lets this process use the tiles:
// asks for them once (arch_prctl ARCH_REQ_XCOMP_PERM, XTILEDATA), as a thread must before its first
// tile instruction. False elsewhere.
bool amx_tiles_granted();
// Whether the CPU has AVX-VNNI (cpuid leaf 7, sub-leaf 1, EAX bit 4) and AVX2, ignoring ROBERTA_ISA
// (asked once).
bool cpu_has_avx_vnni();
// min(detected, ROBERTA_ISA): what the kernels use. Throws roberta::Error for a bad ROBERTA_ISA.
Isa usable_isa();
// usable_isa() >= Isa::kAvxVnni and the CPU has AVX-VNNI.
bool avx_vnni_usable();

}  // namespace roberta::kernels
