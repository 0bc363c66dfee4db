// The fp32 product's AVX2 register blocks (fp32_blocks.h's BlockFn), also run on bf16 panels
// widened in registers (W = uint16_t).
#if defined(__x86_64__)
#include <algorithm>
#include <type_traits>

#include "kernels/gemm/fp32_blocks.h"
#include "kernels/gemm/x86_blocks.h"

namespace roberta::kernels::gemm_impl {
namespace {

// AVX2: an MR x 32 block as two passes of MR rows x 16 columns (for 6 rows 12 accumulators, with
// the two panel vectors and the broadcast 15 of the 16 ymm registers: BLIS's AVX2 6 x 16 kernel);
// exactly MR rows. (Not 4 x 32 in one pass: 16 accumulators and the 4 panel vectors do not fit in
// 16 registers, and it runs at about half of OpenBLAS's AVX2 kernel's rate;
// docs/performance.md#figures-behind-the-code.)
// W = uint16_t: a bf16 panel (block_portable); a pass's 16 columns of a k pair are two registers
// of 8 pairs, the even k's widened and multiplied first, then the odd k's, so that the 12
// accumulators stay in registers (GCC 12 reads the weights again from L1 for the odd k's, and
// the mask from the stack: one load each per k pair). Register block `block` of the chunk's
// `blocks`, for its PanelPrefetch: with kAhead the first pass prefetches, with kNextSlice both do,
// each as a block of its own.
template <size_t MR, typename W, Prefetch P>
__attribute__((target("avx2,fma"))) void block_avx2(const float* x, size_t ldx, const W* panel, size_t k0, size_t k1,
                                                    const float* bias, bool first, float* y, size_t ldy, size_t block,
                                                    size_t blocks) {
  for (size_t h = 0; h < PackedWeight::kPanel; h += 16) {
    const bool prefetching = P == Prefetch::kNextSlice || h == 0;
    PanelPrefetch<P> prefetch(panel, k0, k1, 2 * block + h / 16, 2 * blocks);
    __m256 c0[MR], c1[MR];
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r) {
      c0[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + r * ldy + h);
      c1[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + r * ldy + h + 8);
    }
    if constexpr (std::is_same_v<W, float>) {
      const float* a = x + k0;
      for (size_t k = k0; k < k1; ++k, ++a) {
        const float* b = panel + k * PackedWeight::kPanel;
        if (prefetching) prefetch.step(b);
        const __m256 b0 = _mm256_load_ps(b + h), b1 = _mm256_load_ps(b + h + 8);
#pragma GCC unroll 8
        for (size_t r = 0; r < MR; ++r) {
          const __m256 av = _mm256_broadcast_ss(a + r * ldx);
          c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
          c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
        }
      }
    } else {
      const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
      const float* a = x + 2 * k0;
      for (size_t q = k0; q < k1; ++q, a += 2) {
        const uint16_t* b = panel + q * 64;
        if (prefetching) prefetch.step(b);
        const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 2 * h)),
                      w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 2 * h + 16));
        const __m256 e0 = _mm256_castsi256_ps(_mm256_slli_epi32(w0, 16)),
                     e1 = _mm256_castsi256_ps(_mm256_slli_epi32(w1, 16));
#pragma GCC unroll 8
        for (size_t r = 0; r < MR; ++r) {
          const __m256 ae = _mm256_broadcast_ss(a + r * ldx);
          c0[r] = _mm256_fmadd_ps(ae, e0, c0[r]);
          c1[r] = _mm256_fmadd_ps(ae, e1, c1[r]);
        }
        const __m256 o0 = _mm256_castsi256_ps(_mm256_and_si256(w0, high)),
                     o1 = _mm256_castsi256_ps(_mm256_and_si256(w1, high));
#pragma GCC unroll 8
        for (size_t r = 0; r < MR; ++r) {
          const __m256 ao = _mm256_broadcast_ss(a + r * ldx + 1);
          c0[r] = _mm256_fmadd_ps(ao, o0, c0[r]);
          c1[r] = _mm256_fmadd_ps(ao, o1, c1[r]);
        }
      }
    }
    const __m256 bias0 = bias ? _mm256_loadu_ps(bias + h) : _mm256_setzero_ps();
    const __m256 bias1 = bias ? _mm256_loadu_ps(bias + h + 8) : _mm256_setzero_ps();
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r) {
      _mm256_storeu_ps(y + r * ldy + h, bias ? _mm256_add_ps(c0[r], bias0) : c0[r]);
      _mm256_storeu_ps(y + r * ldy + h + 8, bias ? _mm256_add_ps(c1[r], bias1) : c1[r]);
    }
  }
}

// Any number of rows: 6-row blocks, the last rows through the block of their exact count; a ragged
// last panel (fewer than 32 columns) through the portable loop.
template <typename W, Prefetch P>
__attribute__((target("avx2,fma"), flatten)) void blocks_avx2(const float* x, size_t ldx, size_t rows,
                                                             const W* panel, size_t k0, size_t k1, const float* bias,
                                                             bool first, float* y, size_t ldy, size_t cols) {
  if (cols < PackedWeight::kPanel) {
    for (size_t r = 0; r < rows; r += kMaxRows)
      block_portable<W>(x + r * ldx, ldx, std::min(kMaxRows, rows - r), panel, k0, k1, bias, first, y + r * ldy, ldy,
                        cols);
    return;
  }
  using Fn = void (*)(const float* x, size_t ldx, const W* panel, size_t k0, size_t k1, const float* bias, bool first,
                      float* y, size_t ldy, size_t block, size_t blocks);
  static constexpr Fn kByRows[] = {nullptr,             block_avx2<1, W, P>, block_avx2<2, W, P>,
                                   block_avx2<3, W, P>, block_avx2<4, W, P>, block_avx2<5, W, P>};
  const size_t blocks = (rows + 5) / 6;
  size_t r = 0;
  for (; r + 6 <= rows; r += 6)
    block_avx2<6, W, P>(x + r * ldx, ldx, panel, k0, k1, bias, first, y + r * ldy, ldy, r / 6, blocks);
  if (r < rows) kByRows[rows - r](x + r * ldx, ldx, panel, k0, k1, bias, first, y + r * ldy, ldy, r / 6, blocks);
}

}  // namespace

// 6 x 32 blocks prefetching by `prefetch` in products of one row chunk, by kAhead in larger ones.
template <typename W>
Kernel<W> avx2_kernel(Prefetch prefetch) {
  constexpr Prefetch A = Prefetch::kAhead;
  const BlockFn<float, W> fn =
      prefetch == Prefetch::kNextSlice ? blocks_avx2<W, Prefetch::kNextSlice> : blocks_avx2<W, A>;
  return {fn, 6, "avx2", fn, 6, 0, nullptr, nullptr, blocks_avx2<W, A>, nullptr};
}
template Kernel<float> avx2_kernel<float>(Prefetch);
template Kernel<uint16_t> avx2_kernel<uint16_t>(Prefetch);

}  // namespace roberta::kernels::gemm_impl
#endif
