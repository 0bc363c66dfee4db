// The bf16 product's AVX512-BF16 register blocks (vdpbf16ps; fp32_blocks.h's BlockFn on bf16
// pairs) and the rounding of fp32 rows to bf16 pairs by vcvtneps2bf16.
#include "kernels/gemm/built.h"
#if defined(ROBERTA_HAVE_BF16_KERNEL)
#include <algorithm>

#include "kernels/gemm/bf16_avx512.h"
#include "kernels/gemm/bf16_convert.h"
#include "kernels/gemm/x86_blocks.h"
#include "kernels/packed_gemm.h"

namespace roberta::kernels::gemm_impl {
namespace {

// Register block `block` of the chunk's `blocks`, for its PanelPrefetch.
template <size_t MR, Prefetch P>
__attribute__((target("avx512f,avx512bf16"))) void bf16_block_avx512(const uint32_t* xb, size_t ldx_pairs, size_t rows,
                                                                     const uint16_t* panel, size_t q0, size_t q1,
                                                                     const float* bias, bool first, float* y,
                                                                     size_t ldy, size_t cols, size_t block,
                                                                     size_t blocks) {
  __m512 c0[MR], c1[MR];
  load_block<MR>(c0, c1, rows, first, y, ldy, cols);
  PanelPrefetch<P> prefetch(panel, q0, q1, block, blocks);
  if (rows == MR) {
    const uint32_t* a = xb + q0;
    for (size_t q = q0; q < q1; ++q, ++a) {
      const uint16_t* b = panel + q * 64;
      prefetch.step(b);
      const __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 32);
#pragma GCC unroll 16
      for (size_t r = 0; r < MR; ++r) {
        const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[r * ldx_pairs]));
        c0[r] = _mm512_dpbf16_ps(c0[r], av, b0);
        c1[r] = _mm512_dpbf16_ps(c1[r], av, b1);
      }
    }
  } else {
    for (size_t q = q0; q < q1; ++q) {
      prefetch.step(panel + q * 64);
      const __m512bh b0 = (__m512bh)_mm512_load_si512(panel + q * 64);
      const __m512bh b1 = (__m512bh)_mm512_load_si512(panel + q * 64 + 32);
      for (size_t r = 0; r < rows; ++r) {
        const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(xb[r * ldx_pairs + q]));
        c0[r] = _mm512_dpbf16_ps(c0[r], av, b0);
        c1[r] = _mm512_dpbf16_ps(c1[r], av, b1);
      }
    }
  }
  store_block<MR>(c0, c1, rows, bias, y, ldy, cols);
}

template <size_t MR, Prefetch P>
__attribute__((target("avx512f,avx512bf16"), flatten)) void bf16_blocks_avx512(const uint32_t* xb, size_t ldx_pairs,
                                                                              size_t rows, const uint16_t* panel,
                                                                              size_t q0, size_t q1, const float* bias,
                                                                              bool first, float* y, size_t ldy,
                                                                              size_t cols) {
  if constexpr (P == Prefetch::kNextSlice)
    if (rows <= MR)  // one block: as blocks_avx512
      return bf16_blocks_avx512<MR, Prefetch::kAhead>(xb, ldx_pairs, rows, panel, q0, q1, bias, first, y, ldy, cols);
  const size_t blocks = (rows + MR - 1) / MR;
  for (size_t r = 0; r < rows; r += MR)
    bf16_block_avx512<MR, P>(xb + r * ldx_pairs, ldx_pairs, std::min(MR, rows - r), panel, q0, q1, bias, first,
                             y + r * ldy, ldy, cols, r / MR, blocks);
}

}  // namespace

BlockFn<uint32_t, uint16_t> bf16_blocks_avx512_fn(Prefetch prefetch) {
  return prefetch == Prefetch::kNextSlice ? bf16_blocks_avx512<kMaxRows, Prefetch::kNextSlice>
                                          : bf16_blocks_avx512<kMaxRows, Prefetch::kAhead>;
}

// vcvtneps2bf16 rounds to nearest even as to_bf16 does (NaN stays NaN; denormals become zero).
__attribute__((target("avx512f,avx512bf16"))) void to_bf16_pairs_avx512(const float* x, size_t ldx, size_t rows,
                                                                        size_t k, uint32_t* out, size_t ldp) {
  for (size_t m = 0; m < rows; ++m) {
    const float* src = x + m * ldx;
    uint16_t* dst = reinterpret_cast<uint16_t*>(out + m * ldp);
    size_t i = 0;
    for (; i + 16 <= k; i += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + i)));
    for (; i < k; ++i) dst[i] = to_bf16(src[i]);
    if (k % 2) dst[k] = 0;
  }
}

}  // namespace roberta::kernels::gemm_impl
#endif
