#pragma once
// The x86 register blocks' shared parts: the panel prefetch, and the AVX-512 block's loads and
// stores (with the bias and GELU). Used by the fp32, widened-bf16 and AVX512-BF16 blocks.
#if defined(__x86_64__)
#include <cstddef>

#include "kernels/avx512_math.h"
#include "kernels/intrinsics.h"
#include "kernels/panel_prefetch.h"

namespace roberta::kernels::gemm_impl {
// How far ahead (in k steps of one 128-byte panel row) the kernel asks for panel rows: into L1
// for the next few, into L2 for the far ones (kAhead), so that a thread streaming weights from
// memory keeps enough requests in flight, which the hardware prefetcher alone does not
// (docs/performance.md#figures-behind-the-code).
constexpr size_t kPrefetchL1 = 48, kPrefetchL2 = 384;

// The panel prefetches of register block `block` of a chunk's `blocks`, one step per 128-byte
// panel row it multiplies by (fp32: 32 floats; bf16: 32 pairs), rows k0 to k1: each step asks for
// the row kPrefetchL1 ahead into L1, and for more into L2:
// - kAhead: the row kPrefetchL2 ahead. Only the first block of a chunk reads the panel from
//   memory; the others find it in L2, and their prefetches ask for rows that are mostly there too,
//   so memory sits idle while they run: a product's time is about its read time plus its compute
//   time.
// - kNextSlice: the block's share of the panel's next k slice (NextSlicePrefetch), so that memory
//   keeps streaming while every block computes. It needs blocks >= 2; the walkers use kAhead for
//   one block (the whole next slice on one block is slower), and the Kernel for products of more
//   than one row chunk (no faster there). Which one a CPU model takes: panel_prefetch()
//   (docs/performance.md#figures-behind-the-code).
template <Prefetch P>
class PanelPrefetch {
 public:
  __attribute__((always_inline)) PanelPrefetch(const void* panel, size_t k0, size_t k1, size_t block, size_t blocks)
      : next_(panel, k0, k1, block, blocks) {}

  // The prefetches that go with panel row `row`.
  __attribute__((always_inline)) void step(const void* row) {
    const char* p = static_cast<const char*>(row);
    _mm_prefetch(p + kPrefetchL1 * 128, _MM_HINT_T0);
    _mm_prefetch(p + kPrefetchL1 * 128 + 64, _MM_HINT_T0);
    if constexpr (P == Prefetch::kNextSlice) {
      next_.step();
    } else {
      _mm_prefetch(p + kPrefetchL2 * 128, _MM_HINT_T1);
      _mm_prefetch(p + kPrefetchL2 * 128 + 64, _MM_HINT_T1);
    }
  }

 private:
  NextSlicePrefetch<2> next_;  // (unused with kAhead)
};

__attribute__((target("avx512f"))) inline __mmask16 low_mask(size_t cols) {
  return cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
}

// Loads (or starts) the MR x 32 accumulators of a block.
template <size_t MR>
__attribute__((target("avx512f"), always_inline)) inline void load_block(__m512 (&c0)[MR], __m512 (&c1)[MR],
                                                                          size_t rows, bool first, const float* y,
                                                                          size_t ldy, size_t cols) {
  const __mmask16 m0 = low_mask(cols), m1 = cols <= 16 ? 0 : low_mask(cols - 16);
  for (size_t r = 0; r < MR; ++r) {
    if (r >= rows || first) {
      c0[r] = c1[r] = _mm512_setzero_ps();
    } else {
      c0[r] = _mm512_maskz_loadu_ps(m0, y + r * ldy);
      c1[r] = _mm512_maskz_loadu_ps(m1, y + r * ldy + 16);
    }
  }
}

// Stores the block (+ bias); with Gelu, GELU of that (the values activation_rows would compute
// from y, bit for bit: the same gelu_avx512), without a pass over y of its own.
template <size_t MR, bool Gelu = false>
__attribute__((target("avx512f"), always_inline)) inline void store_block(const __m512 (&c0)[MR],
                                                                           const __m512 (&c1)[MR], size_t rows,
                                                                           const float* bias, float* y, size_t ldy,
                                                                           size_t cols) {
  const __mmask16 m0 = low_mask(cols), m1 = cols <= 16 ? 0 : low_mask(cols - 16);
  const __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 b1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  for (size_t r = 0; r < rows; ++r) {
    __m512 v0 = bias ? _mm512_add_ps(c0[r], b0) : c0[r], v1 = bias ? _mm512_add_ps(c1[r], b1) : c1[r];
    if constexpr (Gelu) {
      v0 = gelu_avx512(v0);
      v1 = gelu_avx512(v1);
    }
    _mm512_mask_storeu_ps(y + r * ldy, m0, v0);
    _mm512_mask_storeu_ps(y + r * ldy + 16, m1, v1);
  }
}

}  // namespace roberta::kernels::gemm_impl
#endif
