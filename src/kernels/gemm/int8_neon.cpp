// The int8 product's kernels for 64-bit ARM: with the dot product (ASIMDDP: sdot) and with I8MM
// (smmla), both on the vpdpbusd layout of PackedWeightInt8 (packed_gemm_int8.h), as Int8BlockFn.
#if defined(__aarch64__)
#include <arm_neon.h>

#include "kernels/gemm/int8_blocks.h"
#include "kernels/gemm/neon_mmla.h"

#define ROBERTA_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#define ROBERTA_I8MM __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))

namespace roberta::kernels::int8_impl {
namespace {

constexpr size_t kBlockRows = 4;  // rows of the sdot and smmla register blocks (row_blocks)

// y[r][j] = x_scale[r] · w_scale[j] · sums[r][j] (+ y) (+ bias) for the columns [h, min(cols, h + 16)),
// as the portable loop rounds it; sums: (rows, 16).
inline void dequantize(const int32_t (*sums)[16], size_t rows, size_t h, const float* x_scale, const float* w_scale,
                       const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = h; j < std::min(cols, h + 16); ++j) {
      float value = static_cast<float>(sums[r][j - h]) * (x_scale[r] * w_scale[j]);
      if (!first) value += y[r * ldy + j];
      y[r * ldy + j] = bias ? value + bias[j] : value;
    }
}

// c[r][v] += the products of x's quad `lane` of xv[r] with the 16 columns' quads in b[v]:
// `sdot c.4s, b.16b, xv.4b[lane]`, one column per int32 lane.
template <int Lane, size_t MR>
ROBERTA_DOTPROD inline void dot_lane(int32x4_t (&c)[MR][4], const int8x16_t (&b)[4], const int8x16_t (&xv)[MR]) {
#pragma GCC unroll 16
  for (size_t r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (size_t v = 0; v < 4; ++v) c[r][v] = vdotq_laneq_s32(c[r][v], b[v], xv[r], Lane);
}

// An MR x 64 block as four passes of MR rows x 16 columns: 4 * MR int32 accumulators. x's bytes
// are q + 128 (quantize_rows); flipping the top bit gives back the signed q, so sdot sums q · w
// and the offset the unsigned product would need is left aside (as AVX2's vpmaddubsw kernel).
// x's quads are read four at a time into one register, each quad then an indexed element of sdot.
//   xq: (MR, ldq) quads, panel: (quads, 64, 4) bytes, y: (MR, ldy), columns [0, cols).
template <size_t MR>
ROBERTA_DOTPROD void block_sdot(const uint32_t* xq, size_t ldq, const int8_t* panel, size_t q0, size_t q1,
                                const float* x_scale, const float* w_scale, const float* bias, bool first, float* y,
                                size_t ldy, size_t cols) {
  const uint32x4_t flip = vdupq_n_u32(0x80808080u);
  for (size_t h = 0; h < kCols; h += 16) {
    int32x4_t c[MR][4];
#pragma GCC unroll 16
    for (size_t r = 0; r < MR; ++r)
#pragma GCC unroll 16
      for (size_t v = 0; v < 4; ++v) c[r][v] = vdupq_n_s32(0);
    const auto columns = [&](size_t q, int8x16_t (&b)[4]) {
#pragma GCC unroll 16
      for (size_t v = 0; v < 4; ++v) b[v] = vld1q_s8(panel + (q * kCols + h + 4 * v) * 4);
    };
    size_t q = q0;
    for (; q + 4 <= q1; q += 4) {
      int8x16_t xv[MR], b[4];
#pragma GCC unroll 16
      for (size_t r = 0; r < MR; ++r) xv[r] = vreinterpretq_s8_u32(veorq_u32(vld1q_u32(xq + r * ldq + q), flip));
      columns(q, b);
      dot_lane<0>(c, b, xv);
      columns(q + 1, b);
      dot_lane<1>(c, b, xv);
      columns(q + 2, b);
      dot_lane<2>(c, b, xv);
      columns(q + 3, b);
      dot_lane<3>(c, b, xv);
    }
    for (; q < q1; ++q) {
      int8x16_t xv[MR], b[4];
#pragma GCC unroll 16
      for (size_t r = 0; r < MR; ++r) xv[r] = vreinterpretq_s8_u32(vdupq_n_u32(xq[r * ldq + q] ^ 0x80808080u));
      columns(q, b);
      dot_lane<0>(c, b, xv);
    }
    int32_t sums[MR][16];
#pragma GCC unroll 16
    for (size_t r = 0; r < MR; ++r)
#pragma GCC unroll 16
      for (size_t v = 0; v < 4; ++v) vst1q_s32(sums[r] + 4 * v, c[r][v]);
    dequantize(sums, MR, h, x_scale, w_scale, bias, first, y, ldy, cols);
    if (cols <= h + 16) break;
  }
}

// I8MM: smmla multiplies a 2 x 8 block of x (two rows, 8 k) by an 8 x 2 block of the weight (two
// columns) into a 2 x 2 block of int32 sums, [r·j, r·j+1, r+1·j, r+1·j+1]: 32 products an
// instruction where sdot makes 16. The weight's 8 k of columns j, j+1 are two quads of each,
// interleaved from two quad rows of the panel by one zip (vzip1/vzip2 of 32-bit elements: columns
// j..j+3 of quads q and q+1 give columns j, j+1 and j+2, j+3), so the panel layout is sdot's. x's
// two rows of 8 bytes are two loads; x's bytes flipped to signed q as for sdot. A last odd quad
// meets zero weights (x's half past it is read as zeros, flipped: they add nothing); a last odd row
// pairs with itself (its copy's sums are dropped).
// An MR x 64 block as four passes of MR rows x 16 columns: (MR + 1) / 2 x 8 accumulators.
//   xq: (MR, ldq) quads, panel: (quads, 64, 4) bytes, y: (MR, ldy), columns [0, cols).
template <size_t MR>
ROBERTA_I8MM void block_smmla(const uint32_t* xq, size_t ldq, const int8_t* panel, size_t q0, size_t q1,
                              const float* x_scale, const float* w_scale, const float* bias, bool first, float* y,
                              size_t ldy, size_t cols) {
  constexpr size_t kPairs = (MR + 1) / 2;
  const uint8x16_t flip = vdupq_n_u8(0x80);
  const auto row = [&](size_t r) { return xq + std::min(r, MR - 1) * ldq; };
  const auto* units = reinterpret_cast<const uint32_t*>(panel);  // (quads, 64)
  for (size_t h = 0; h < kCols; h += 16) {
    int32x4_t c[kPairs][8];
#pragma GCC unroll 16
    for (size_t p = 0; p < kPairs; ++p)
#pragma GCC unroll 16
      for (size_t v = 0; v < 8; ++v) c[p][v] = vdupq_n_s32(0);
    for (size_t q = q0; q < q1; q += 2) {
      const bool pair = q + 1 < q1;
      int8x16_t a[kPairs], b[8];
#pragma GCC unroll 16
      for (size_t p = 0; p < kPairs; ++p) {
        const uint32x4_t v = mmla::two_rows(row(2 * p) + q, row(2 * p + 1) + q, pair);
        a[p] = vreinterpretq_s8_u8(veorq_u8(vreinterpretq_u8_u32(v), flip));
      }
#pragma GCC unroll 16
      for (size_t v = 0; v < 4; ++v) {
        const uint32_t* at = units + q * kCols + h + 4 * v;
        uint32x4_t cols01, cols23;
        mmla::column_pairs(at, pair ? at + kCols : nullptr, cols01, cols23);
        b[2 * v] = vreinterpretq_s8_u32(cols01);
        b[2 * v + 1] = vreinterpretq_s8_u32(cols23);
      }
#pragma GCC unroll 16
      for (size_t p = 0; p < kPairs; ++p)
#pragma GCC unroll 16
        for (size_t v = 0; v < 8; ++v) c[p][v] = vmmlaq_s32(c[p][v], a[p], b[v]);
    }
    int32_t sums[2 * kPairs][16];
#pragma GCC unroll 16
    for (size_t p = 0; p < kPairs; ++p)
#pragma GCC unroll 16
      for (size_t v = 0; v < 8; ++v) {
        vst1_s32(sums[2 * p] + 2 * v, vget_low_s32(c[p][v]));
        vst1_s32(sums[2 * p + 1] + 2 * v, vget_high_s32(c[p][v]));
      }
    dequantize(sums, MR, h, x_scale, w_scale, bias, first, y, ldy, cols);
    if (cols <= h + 16) break;
  }
}

// A block of exactly its row count (1 to kBlockRows), as block_sdot and block_smmla.
using RowsFn = void (*)(const uint32_t* xq, size_t ldq, const int8_t* panel, size_t q0, size_t q1,
                        const float* x_scale, const float* w_scale, const float* bias, bool first, float* y,
                        size_t ldy, size_t cols);

// Any number of rows through ByRows: kBlockRows at a time, the last ones through the block of
// their count; offset unused (the blocks sum q · w).
template <const RowsFn (&ByRows)[kBlockRows + 1]>
void row_blocks(const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1,
                const int32_t*, const float* x_scale, const float* w_scale, const float* bias, bool first, float* y,
                size_t ldy, size_t cols) {
  for (size_t r = 0; r < rows; r += kBlockRows)
    ByRows[std::min(kBlockRows, rows - r)](xq + r * ldq, ldq, panel, q0, q1, x_scale + r, w_scale, bias, first,
                                          y + r * ldy, ldy, cols);
}

constexpr RowsFn kSdot[kBlockRows + 1] = {nullptr, block_sdot<1>, block_sdot<2>, block_sdot<3>, block_sdot<4>};
constexpr RowsFn kSmmla[kBlockRows + 1] = {nullptr, block_smmla<1>, block_smmla<2>, block_smmla<3>, block_smmla<4>};

}  // namespace

Int8Kernel smmla_int8_kernel() {
  return {row_blocks<kSmmla>, nullptr, quantize_rows_portable, kBlockRows, "NEON-I8MM"};
}

Int8Kernel sdot_int8_kernel() {
  return {row_blocks<kSdot>, nullptr, quantize_rows_portable, kBlockRows, "NEON-SDOT"};
}

}  // namespace roberta::kernels::int8_impl
#endif
