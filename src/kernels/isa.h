#pragma once
// The instruction-set level the kernels use here, from the kernel plan (runtime/plan.h): what the
// CPU has, capped by ROBERTA_ISA so that every lower path can be tested on one machine:
//
//   ROBERTA_ISA=avx2 ./build/roberta fill-mask ...    // the AVX2 GEMM, the portable bf16 product
//
// The levels and what each needs: runtime/isa.h. A bad ROBERTA_ISA is a roberta::Error naming the
// accepted values, raised when the plan is first made.
#include "runtime/isa.h"
#include "runtime/plan.h"

namespace roberta::kernels {

using runtime::Isa;
using runtime::isa_name;

// What the kernels use: min(what the CPU has, ROBERTA_ISA).
inline Isa usable_isa() { return runtime::plan().isa; }
// What the CPU has, ignoring ROBERTA_ISA.
inline Isa detected_isa() { return runtime::plan().detected; }
// usable_isa() >= Isa::kAvxVnni and the CPU has AVX-VNNI.
inline bool avx_vnni_usable() { return runtime::plan().avx_vnni; }

}  // namespace roberta::kernels
