#pragma once
// Which instruction sets the kernels may use on this CPU. Detected once with cpuid; the
// ROBERTA_ISA environment variable caps the choice, so that every lower path can be tested on
// one machine:
//
//   ROBERTA_ISA=avx2 ./build/roberta fill-mask ...    // the AVX2 GEMM, the portable bf16 product
//
// Accepted values, highest first: avx512bf16, avx512, avx2, portable. Any other value is an error
// (roberta::Error naming the accepted ones) the first time a kernel asks.
#include <optional>
#include <string_view>

namespace roberta::kernels {

enum class Isa { kPortable, kAvx2, kAvx512, kAvx512Bf16 };  // each level includes the ones before

const char* isa_name(Isa isa);  // "portable", "avx2", "avx512", "avx512bf16"
// The level named by a ROBERTA_ISA value; throws roberta::Error for an unknown value.
Isa parse_isa(std::string_view value);
// What this CPU supports (cpuid), ignoring ROBERTA_ISA.
Isa detected_isa();
// min(detected, ROBERTA_ISA): what the kernels use. Throws roberta::Error for a bad ROBERTA_ISA.
Isa usable_isa();

}  // namespace roberta::kernels
