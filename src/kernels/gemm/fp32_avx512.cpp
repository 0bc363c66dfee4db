// The fp32 product's AVX-512 register blocks (fp32_blocks.h's BlockFn), also run on bf16 panels
// widened in registers (W = uint16_t) where the CPU has no bf16 instructions.
#if defined(__x86_64__)
#include <algorithm>
#include <iterator>
#include <type_traits>

#include "kernels/gemm/fp32_blocks.h"
#include "kernels/gemm/x86_blocks.h"

namespace roberta::kernels::gemm_impl {
namespace {

// MR x 32 block in 2 * MR zmm accumulators; exactly MR rows (blocks_avx512 passes the last rows of
// a chunk to the block of their count); register block `block` of the chunk's `blocks`, for its
// PanelPrefetch. Gelu: GELU applied by the store (pass it with the last k slice only).
// W = uint16_t: a bf16 panel (block_portable), a pair of k a step: its 32 pairs are two registers
// of 16, whose even k is the pair's low half shifted up and whose odd k is the high half.
template <size_t MR, bool Gelu, typename W, Prefetch P>
__attribute__((target("avx512f"))) void block_avx512(const float* x, size_t ldx, const W* panel, size_t k0, size_t k1,
                                                     const float* bias, bool first, float* y, size_t ldy, size_t cols,
                                                     size_t block, size_t blocks) {
  __m512 c0[MR], c1[MR];
  load_block<MR>(c0, c1, MR, first, y, ldy, cols);
  PanelPrefetch<P> prefetch(panel, k0, k1, block, blocks);
  if constexpr (std::is_same_v<W, float>) {
    const float* a = x + k0;
    for (size_t k = k0; k < k1; ++k, ++a) {
      const float* b = panel + k * 32;
      prefetch.step(b);
      const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 16
      for (size_t r = 0; r < MR; ++r) {
        const __m512 av = _mm512_set1_ps(a[r * ldx]);
        c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
        c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
      }
    }
  } else {
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    const float* a = x + 2 * k0;
    for (size_t q = k0; q < k1; ++q, a += 2) {
      const uint16_t* b = panel + q * 64;
      prefetch.step(b);
      const __m512i w0 = _mm512_load_si512(b), w1 = _mm512_load_si512(b + 32);
      const __m512 e0 = _mm512_castsi512_ps(_mm512_slli_epi32(w0, 16)),
                   e1 = _mm512_castsi512_ps(_mm512_slli_epi32(w1, 16)),
                   o0 = _mm512_castsi512_ps(_mm512_and_si512(w0, high)),
                   o1 = _mm512_castsi512_ps(_mm512_and_si512(w1, high));
#pragma GCC unroll 16
      for (size_t r = 0; r < MR; ++r) {
        const __m512 ae = _mm512_set1_ps(a[r * ldx]), ao = _mm512_set1_ps(a[r * ldx + 1]);
        c0[r] = _mm512_fmadd_ps(ae, e0, c0[r]);
        c1[r] = _mm512_fmadd_ps(ae, e1, c1[r]);
        c0[r] = _mm512_fmadd_ps(ao, o0, c0[r]);
        c1[r] = _mm512_fmadd_ps(ao, o1, c1[r]);
      }
    }
  }
  store_block<MR, Gelu>(c0, c1, MR, bias, y, ldy, cols);
}

// Any number of rows (a row chunk): full MR-row blocks inlined into the loop (flatten), the last
// rows through the block of their exact count (a loop over a run-time row count for those is
// slower: docs/performance.md#figures-behind-the-code).
template <size_t MR, bool Gelu, typename W, Prefetch P>
__attribute__((target("avx512f"), flatten)) void blocks_avx512(const float* x, size_t ldx, size_t rows,
                                                              const W* panel, size_t k0, size_t k1,
                                                              const float* bias, bool first, float* y, size_t ldy,
                                                              size_t cols) {
  using Fn = void (*)(const float* x, size_t ldx, const W* panel, size_t k0, size_t k1, const float* bias, bool first,
                      float* y, size_t ldy, size_t cols, size_t block, size_t blocks);
  static constexpr Fn kByRows[] = {
      nullptr,
      block_avx512<1, Gelu, W, P>,
      block_avx512<2, Gelu, W, P>,
      block_avx512<3, Gelu, W, P>,
      block_avx512<4, Gelu, W, P>,
      block_avx512<5, Gelu, W, P>,
      block_avx512<6, Gelu, W, P>,
      block_avx512<7, Gelu, W, P>,
      block_avx512<8, Gelu, W, P>,
      block_avx512<9, Gelu, W, P>,
      block_avx512<10, Gelu, W, P>,
      block_avx512<11, Gelu, W, P>};
  static_assert(MR <= std::size(kByRows));
  if constexpr (P == Prefetch::kNextSlice)
    if (rows <= MR)  // one block: the next slice is slower there (PanelPrefetch)
      return blocks_avx512<MR, Gelu, W, Prefetch::kAhead>(x, ldx, rows, panel, k0, k1, bias, first, y, ldy, cols);
  const size_t blocks = (rows + MR - 1) / MR;
  size_t r = 0;
  for (; r + MR <= rows; r += MR)
    block_avx512<MR, Gelu, W, P>(x + r * ldx, ldx, panel, k0, k1, bias, first, y + r * ldy, ldy, cols, r / MR, blocks);
  if (r < rows)
    kByRows[rows - r](x + r * ldx, ldx, panel, k0, k1, bias, first, y + r * ldy, ldy, cols, r / MR, blocks);
}

// The blocks prefetching by P in products of one row chunk, by kAhead in larger ones (where the
// next slice is no faster: docs/performance.md#figures-behind-the-code). 12 x 32 blocks feed 24
// FMAs per 128-byte panel row instead of 16; products of at most 32 rows keep 8 x 32 (two blocks
// of 8 beat 12 + 4). Which one a CPU model takes: runtime/cpu.h.
template <typename W, Prefetch P>
Kernel<W> avx512_kernel_with(bool rows8) {
  constexpr Prefetch A = Prefetch::kAhead;
  if (rows8)
    return {blocks_avx512<8, false, W, P>, 8, "avx512", blocks_avx512<8, false, W, P>, 8, 0,
            blocks_avx512<8, true, W, P>, blocks_avx512<8, true, W, P>, blocks_avx512<8, false, W, A>,
            blocks_avx512<8, true, W, A>};
  return {blocks_avx512<12, false, W, P>, 12, "avx512", blocks_avx512<8, false, W, P>, 8, 32,
          blocks_avx512<12, true, W, P>, blocks_avx512<8, true, W, P>, blocks_avx512<12, false, W, A>,
          blocks_avx512<12, true, W, A>};
}

}  // namespace

template <typename W>
Kernel<W> avx512_kernel(bool rows8, Prefetch prefetch) {
  return prefetch == Prefetch::kNextSlice ? avx512_kernel_with<W, Prefetch::kNextSlice>(rows8)
                                          : avx512_kernel_with<W, Prefetch::kAhead>(rows8);
}
template Kernel<float> avx512_kernel<float>(bool, Prefetch);
template Kernel<uint16_t> avx512_kernel<uint16_t>(bool, Prefetch);

}  // namespace roberta::kernels::gemm_impl
#endif
