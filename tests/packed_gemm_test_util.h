#pragma once
// Shared by packed_gemm_int8_test.cpp and packed_gemm_bf16_amx_test.cpp: whether the AMX kernels
// (kernels/amx_gemm.h) run here emulated.
#include "kernels/isa.h"

namespace roberta::test {

// The AMX tile instructions are emulated in C++ on every CPU with AVX-512 (the epilogue's).
inline bool emulation_runs_here() { return roberta::kernels::detected_isa() >= roberta::kernels::Isa::kAvx512; }

}  // namespace roberta::test
