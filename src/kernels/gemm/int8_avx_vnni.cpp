// The int8 product on AVX-VNNI (the VEX-encoded vpdpbusd, also on CPUs without AVX-512).
#include "kernels/gemm/int8_blocks.h"
#if defined(ROBERTA_HAVE_AVX_VNNI_KERNEL)
#include <cstring>

#include "kernels/intrinsics.h"
#include "kernels/panel_prefetch.h"

namespace roberta::kernels::int8_impl {
namespace {

// AVX-VNNI (the VEX-encoded VNNI, also on CPUs without AVX-512): vpdpbusd on 8-int
// registers sums x's unsigned bytes (q + 128) times the signed weights into 32 bits without
// saturating, as the AVX512-VNNI kernel does on 16; the offset (128 · the column's weight sum) comes
// off in the epilogue. MR rows x 16 columns a pass (2 · MR accumulators, two weight vectors and
// the broadcast: 15 of 16 registers at MR = 6), four passes over the 64-column panel; a ragged
// last panel's columns past `cols` neither read (scales, bias, offsets, y) nor written. Next: each
// pass that runs (fewer than four in a ragged panel) asks for its share of the panel's next k slice
// as a part of its own (as the AVX2 kernel's).
template <size_t MR, bool Next>
__attribute__((target("avx2,fma,avxvnni"))) void int8_block_avx_vnni_rows(
    const uint32_t* xq, size_t ldq, const int8_t* panel, size_t q0, size_t q1, const int32_t* offset,
    const float* x_scale, const float* w_scale, const float* bias, bool first, float* y, size_t ldy, size_t cols,
    size_t block, size_t blocks) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const size_t passes = (std::min(kCols, cols) + 15) / 16;
  for (size_t c0 = 0; c0 < std::min(kCols, cols); c0 += 16) {
    __m256i acc0[MR], acc1[MR];
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r) acc0[r] = acc1[r] = _mm256_setzero_si256();
    NextSlicePrefetch<4> prefetch(panel, q0, q1, passes * block + c0 / 16, passes * blocks);
    const uint32_t* a = xq + q0;
    for (size_t q = q0; q < q1; ++q, ++a) {
      if constexpr (Next) prefetch.step();
      const int8_t* b = panel + (q * kCols + c0) * 4;
      const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b)),
                    b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32));
#pragma GCC unroll 8
      for (size_t r = 0; r < MR; ++r) {
        const __m256i av = _mm256_set1_epi32(static_cast<int>(a[r * ldq]));
        acc0[r] = _mm256_dpbusd_avx_epi32(acc0[r], av, b0);
        acc1[r] = _mm256_dpbusd_avx_epi32(acc1[r], av, b1);
      }
    }
    // Each 8-column half: the columns below `cols` (all 8 but in a ragged panel's last pass).
    for (size_t h = 0; h < 2; ++h) {
      const size_t c = c0 + 8 * h, n = cols > c ? std::min<size_t>(8, cols - c) : 0;
      if (n == 0) break;
      const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lane);
      const __m256 s = _mm256_maskload_ps(w_scale + c, m);
      const __m256i o = _mm256_maskload_epi32(offset + c, m);
      const __m256 bv = bias ? _mm256_maskload_ps(bias + c, m) : _mm256_setzero_ps();
#pragma GCC unroll 8
      for (size_t r = 0; r < MR; ++r) {
        float* out = y + r * ldy + c;
        const __m256i sum = _mm256_sub_epi32(h == 0 ? acc0[r] : acc1[r], o);
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(_mm256_set1_ps(x_scale[r]), s));
        if (!first) v = _mm256_add_ps(v, n == 8 ? _mm256_loadu_ps(out) : _mm256_maskload_ps(out, m));
        if (bias) v = _mm256_add_ps(v, bv);
        if (n == 8)
          _mm256_storeu_ps(out, v);
        else
          _mm256_maskstore_ps(out, m, v);
      }
    }
  }
}

// Any number of rows: blocks of kMaxRows (int8_row_blocks).
template <bool Next>
__attribute__((target("avx2,fma,avxvnni"), flatten)) void int8_block_avx_vnni(
    const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1, const int32_t* offset,
    const float* x_scale, const float* w_scale, const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  static constexpr Int8RowsFn kByRows[kMaxRows] = {nullptr,
                                                   int8_block_avx_vnni_rows<1, Next>,
                                                   int8_block_avx_vnni_rows<2, Next>,
                                                   int8_block_avx_vnni_rows<3, Next>,
                                                   int8_block_avx_vnni_rows<4, Next>,
                                                   int8_block_avx_vnni_rows<5, Next>};
  int8_row_blocks<kMaxRows, int8_block_avx_vnni_rows<kMaxRows, Next>>(kByRows, xq, ldq, rows, panel, q0, q1, offset,
                                                                      x_scale, w_scale, bias, first, y, ldy, cols);
}

}  // namespace

Int8Kernel avx_vnni_int8_kernel(bool next) {
  return {next ? int8_block_avx_vnni<true> : int8_block_avx_vnni<false>, nullptr, quantize_rows_avx2, kMaxRows,
          "AVX-VNNI", next};
}

}  // namespace roberta::kernels::int8_impl
#endif
