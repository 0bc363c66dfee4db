// The bf16 product's register blocks for 64-bit ARM CPUs with BF16 (bfmmla), on the pair layout of
// PackedWeightBf16 (packed_gemm.h), as fp32_blocks.h's BlockFn over bf16 pairs.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>

#include "kernels/gemm/fp32_blocks.h"
#include "kernels/gemm/neon_mmla.h"

#define ROBERTA_BF16 __attribute__((target("arch=armv8.2-a+bf16")))

namespace roberta::kernels::gemm_impl {
namespace {

constexpr size_t kBfmmlaRows = 4;

// bfmmla multiplies a 2 x 4 block of x (two rows, two k pairs) by a 4 x 2 block of the weight (two
// columns) into a 2 x 2 block of fp32 sums, [r·j, r·j+1, r+1·j, r+1·j+1]. The weight's two pairs
// of columns j, j+1 come from two pair rows of the panel by one zip of 32-bit elements (columns
// j..j+3 of pairs q and q+1: vzip1 gives columns j, j+1, vzip2 j+2, j+3), so the panel layout is
// vdpbf16ps's. A last odd pair goes with zeros; a last odd row pairs with itself (its copy's sums
// dropped). The sums start from zero; y (when not first) and the bias are added after them.
// An MR x 32 block as two passes of MR rows x 16 columns: (MR + 1) / 2 x 8 accumulators.
//   x: (MR, ldx) pairs, panel: (pairs, 32, 2) bf16, y: (MR, ldy), columns [0, cols).
template <size_t MR>
ROBERTA_BF16 void block_bfmmla(const uint32_t* x, size_t ldx, const uint16_t* panel, size_t q0, size_t q1,
                               const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  constexpr size_t kPairs = (MR + 1) / 2, kCols = PackedWeightBf16::kPanel;
  const auto row = [&](size_t r) { return x + std::min(r, MR - 1) * ldx; };
  const auto* units = reinterpret_cast<const uint32_t*>(panel);  // (pairs, 32)
  for (size_t h = 0; h < kCols && h < cols; h += 16) {
    float32x4_t c[kPairs][8];
#pragma GCC unroll 16
    for (size_t p = 0; p < kPairs; ++p)
#pragma GCC unroll 16
      for (size_t v = 0; v < 8; ++v) c[p][v] = vdupq_n_f32(0.0f);
    for (size_t q = q0; q < q1; q += 2) {
      const bool two = q + 1 < q1;
      bfloat16x8_t a[kPairs];
#pragma GCC unroll 16
      for (size_t p = 0; p < kPairs; ++p)
        a[p] = vreinterpretq_bf16_u32(mmla::two_rows(row(2 * p) + q, row(2 * p + 1) + q, two));
#pragma GCC unroll 16
      for (size_t v = 0; v < 4; ++v) {
        const uint32_t* at = units + q * kCols + h + 4 * v;
        uint32x4_t cols01, cols23;
        mmla::column_pairs(at, two ? at + kCols : nullptr, cols01, cols23);
        const bfloat16x8_t b0 = vreinterpretq_bf16_u32(cols01), b1 = vreinterpretq_bf16_u32(cols23);
#pragma GCC unroll 16
        for (size_t p = 0; p < kPairs; ++p) {
          c[p][2 * v] = vbfmmlaq_f32(c[p][2 * v], a[p], b0);
          c[p][2 * v + 1] = vbfmmlaq_f32(c[p][2 * v + 1], a[p], b1);
        }
      }
    }
    float sums[2 * kPairs][16];
#pragma GCC unroll 16
    for (size_t p = 0; p < kPairs; ++p)
#pragma GCC unroll 16
      for (size_t v = 0; v < 8; ++v) {
        vst1_f32(sums[2 * p] + 2 * v, vget_low_f32(c[p][v]));
        vst1_f32(sums[2 * p + 1] + 2 * v, vget_high_f32(c[p][v]));
      }
#pragma GCC unroll 16
    for (size_t r = 0; r < MR; ++r)
      for (size_t j = h; j < std::min(cols, h + 16); ++j) {
        const float value = first ? sums[r][j - h] : y[r * ldy + j] + sums[r][j - h];
        y[r * ldy + j] = bias ? value + bias[j] : value;
      }
  }
}

// Any number of rows, kBfmmlaRows at a time, the last rows through the block of their count.
ROBERTA_BF16 void blocks_bfmmla(const uint32_t* x, size_t ldx, size_t rows, const uint16_t* panel, size_t q0,
                                size_t q1, const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  using Fn = void (*)(const uint32_t*, size_t, const uint16_t*, size_t, size_t, const float*, bool, float*, size_t,
                      size_t);
  static constexpr Fn kByRows[] = {nullptr, block_bfmmla<1>, block_bfmmla<2>, block_bfmmla<3>};
  size_t r = 0;
  for (; r + kBfmmlaRows <= rows; r += kBfmmlaRows)
    block_bfmmla<kBfmmlaRows>(x + r * ldx, ldx, panel, q0, q1, bias, first, y + r * ldy, ldy, cols);
  if (r < rows) kByRows[rows - r](x + r * ldx, ldx, panel, q0, q1, bias, first, y + r * ldy, ldy, cols);
}

}  // namespace

BlockFn<uint32_t, uint16_t> bf16_blocks_neon() { return blocks_bfmmla; }
size_t bf16_neon_block_rows() { return kBfmmlaRows; }

}  // namespace roberta::kernels::gemm_impl
#endif
