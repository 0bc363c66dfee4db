#pragma once
// The bf16 conversions the bf16 product's dispatch (bf16.cpp) chooses between (bf16_convert.cpp,
// bf16_avx512.cpp).
#include <cstddef>
#include <cstdint>

#include "kernels/gemm/built.h"

namespace roberta::kernels::gemm_impl {

// bf16 pairs (rows, q) with row stride ldp widened to fp32: out (rows, 2q), row stride 2q.
void widen_bf16_rows(const uint32_t* pairs, size_t ldp, size_t rows, size_t q, float* out);
// x (rows, k), row stride ldx, rounded as to_bf16 and widened back to fp32: out (rows, 2q), row
// stride 2q, q = (k + 1) / 2 (an odd k padded with a zero).
void round_bf16_widened_rows(const float* x, size_t ldx, size_t rows, size_t k, float* out);
// x (rows, k), row stride ldx -> bf16 pairs (rows, (k + 1) / 2), row stride ldp, by to_bf16_row.
void to_bf16_pairs_by_rows(const float* x, size_t ldx, size_t rows, size_t k, uint32_t* out, size_t ldp);
#if defined(ROBERTA_HAVE_BF16_KERNEL)
// The same by vcvtneps2bf16 (denormals become zero), on CPUs with AVX512-BF16.
void to_bf16_pairs_avx512(const float* x, size_t ldx, size_t rows, size_t k, uint32_t* out, size_t ldp);
#endif

}  // namespace roberta::kernels::gemm_impl
