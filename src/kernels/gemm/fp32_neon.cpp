// The fp32 product's NEON register blocks for 64-bit ARM (fp32_blocks.h's BlockFn), also run on
// bf16 panels widened in registers (W = uint16_t) where the CPU has no bf16 kernel of ours.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <type_traits>

#include "kernels/gemm/fp32_blocks.h"

namespace roberta::kernels::gemm_impl {
namespace {

// NEON: an MR x 32 block as two passes of MR rows x 16 columns: for 6 rows 24 accumulators (four
// 4-float vectors a row), the pass's 4 panel vectors and x's value, in the 32 vector registers
// (the shape of BLIS's and OpenBLAS's 8 x 12 / 16 x 4 ARMv8 kernels: 24 accumulators). Each
// k is one `fmla v.4s, v.4s, v.s[0]` per accumulator with x[r][k] as the element, in k order, so
// every block shape rounds a row's sums alike. Exactly MR rows, a whole panel (32 columns).
// W = uint16_t: a bf16 panel (block_portable), a k pair a step: a pass's 16 columns of a pair are
// four vectors of 4 pairs; the even k's are each pair's low half shifted up, the odd k's the high
// half masked.
//   x: (MR, ldx) floats (bf16: 2 a pair, widened), panel: (k, 32) (bf16: (pairs, 32, 2)),
//   y: (MR, ldy), the columns [0, 32).
template <size_t MR, typename W>
void block_neon(const float* x, size_t ldx, const W* panel, size_t k0, size_t k1, const float* bias, bool first,
                float* y, size_t ldy) {
  for (size_t h = 0; h < PackedWeight::kPanel; h += 16) {
    float32x4_t c[MR][4];
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r)
#pragma GCC unroll 16
      for (size_t v = 0; v < 4; ++v) c[r][v] = first ? vdupq_n_f32(0.0f) : vld1q_f32(y + r * ldy + h + 4 * v);
    if constexpr (std::is_same_v<W, float>) {
      const float* a = x + k0;
      for (size_t k = k0; k < k1; ++k, ++a) {
        const float* b = panel + k * PackedWeight::kPanel + h;
        const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8), b3 = vld1q_f32(b + 12);
#pragma GCC unroll 8
        for (size_t r = 0; r < MR; ++r) {
          const float av = a[r * ldx];
          c[r][0] = vfmaq_n_f32(c[r][0], b0, av);
          c[r][1] = vfmaq_n_f32(c[r][1], b1, av);
          c[r][2] = vfmaq_n_f32(c[r][2], b2, av);
          c[r][3] = vfmaq_n_f32(c[r][3], b3, av);
        }
      }
    } else {
      const uint32x4_t high = vdupq_n_u32(0xFFFF0000u);
      const float* a = x + 2 * k0;
      for (size_t q = k0; q < k1; ++q, a += 2) {
        const uint16_t* b = panel + q * 2 * PackedWeightBf16::kPanel + 2 * h;
        uint32x4_t w[4];
#pragma GCC unroll 16
        for (size_t v = 0; v < 4; ++v) w[v] = vreinterpretq_u32_u16(vld1q_u16(b + 8 * v));
        float32x4_t e[4], o[4];
#pragma GCC unroll 16
        for (size_t v = 0; v < 4; ++v) {
          e[v] = vreinterpretq_f32_u32(vshlq_n_u32(w[v], 16));
          o[v] = vreinterpretq_f32_u32(vandq_u32(w[v], high));
        }
#pragma GCC unroll 8
        for (size_t r = 0; r < MR; ++r) {
          const float ae = a[r * ldx], ao = a[r * ldx + 1];
#pragma GCC unroll 16
          for (size_t v = 0; v < 4; ++v) c[r][v] = vfmaq_n_f32(vfmaq_n_f32(c[r][v], e[v], ae), o[v], ao);
        }
      }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r)
#pragma GCC unroll 16
      for (size_t v = 0; v < 4; ++v)
        vst1q_f32(y + r * ldy + h + 4 * v, bias ? vaddq_f32(c[r][v], vld1q_f32(bias + h + 4 * v)) : c[r][v]);
  }
}

// Any number of rows: 6-row blocks, the last rows through the block of their exact count; a ragged
// last panel (fewer than 32 columns) through the portable loop.
template <typename W>
void blocks_neon(const float* x, size_t ldx, size_t rows, const W* panel, size_t k0, size_t k1, const float* bias,
                 bool first, float* y, size_t ldy, size_t cols) {
  if (cols < PackedWeight::kPanel) {
    for (size_t r = 0; r < rows; r += kMaxRows)
      block_portable<W>(x + r * ldx, ldx, std::min(kMaxRows, rows - r), panel, k0, k1, bias, first, y + r * ldy, ldy,
                        cols);
    return;
  }
  using Fn = void (*)(const float* x, size_t ldx, const W* panel, size_t k0, size_t k1, const float* bias, bool first,
                      float* y, size_t ldy);
  static constexpr Fn kByRows[] = {nullptr,             block_neon<1, W>, block_neon<2, W>,
                                   block_neon<3, W>,    block_neon<4, W>, block_neon<5, W>};
  size_t r = 0;
  for (; r + 6 <= rows; r += 6) block_neon<6, W>(x + r * ldx, ldx, panel, k0, k1, bias, first, y + r * ldy, ldy);
  if (r < rows) kByRows[rows - r](x + r * ldx, ldx, panel, k0, k1, bias, first, y + r * ldy, ldy);
}

}  // namespace

template <typename W>
Kernel<W> neon_kernel() {
  return {blocks_neon<W>, 6, "neon", blocks_neon<W>, 6, 0};
}
template Kernel<float> neon_kernel<float>();
template Kernel<uint16_t> neon_kernel<uint16_t>();

}  // namespace roberta::kernels::gemm_impl
#endif
