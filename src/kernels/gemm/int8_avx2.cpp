// The int8 product on AVX2 without VNNI (vpmaddubsw, vpmaddwd), and the AVX2 row quantizer that
// the AVX-VNNI kernel shares.
#include "kernels/gemm/int8_blocks.h"
#if defined(ROBERTA_HAVE_AVX2_INT8_KERNEL)
#include <cstring>

#include "kernels/intrinsics.h"
#include "kernels/panel_prefetch.h"

namespace roberta::kernels::int8_impl {
namespace {

// AVX2 without VNNI (CPUs with AVX2 but neither AVX-512 nor AVX-VNNI): vpmaddubsw multiplies
// unsigned by signed bytes and adds pairs into 16 bits with saturation, which x's unsigned q + 128
// (up to 255) times weights of up to ±127 would reach (2 · 255 · 127 > 32767). So
// x goes back to its signed q (the bytes' top bit flipped) and the sign moves to the weight:
// |q| · (±w) (vpsignb; weights are never -128), at most 2 · 127 · 127 = 32258 a pair, then
// vpmaddwd adds the pairs into 32 bits. The sums are then of q · w themselves: no offset to take
// off. MR rows x 16 columns a pass, four passes over the 64-column panel; exactly MR rows. 3 rows
// (6 accumulators) beat 4 or 5 (docs/performance.md#figures-behind-the-code), at about the AVX2 fp32
// kernel's rate: on CPUs without VNNI, int8 gains its smaller weights (memory, cache), not faster
// arithmetic.
// Next: each pass asks for its share of the panel's next k slice as a part of its own
// (NextSlicePrefetch; 4 x the chunk's blocks parts).
template <size_t MR, bool Next>
__attribute__((target("avx2,fma"))) void int8_block_avx2_rows(const uint32_t* xq, size_t ldq, const int8_t* panel,
                                                               size_t q0, size_t q1, const float* x_scale,
                                                               const float* w_scale, const float* bias, bool first,
                                                               float* y, size_t ldy, size_t block, size_t blocks) {
  const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (size_t c0 = 0; c0 < kCols; c0 += 16) {
    __m256i acc0[MR], acc1[MR];
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r) acc0[r] = acc1[r] = _mm256_setzero_si256();
    NextSlicePrefetch<4> prefetch(panel, q0, q1, 4 * block + c0 / 16, 4 * blocks);
    const uint32_t* a = xq + q0;
    for (size_t q = q0; q < q1; ++q, ++a) {
      if constexpr (Next) prefetch.step();
      const int8_t* b = panel + (q * kCols + c0) * 4;
      const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b)),
                    b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 32));
#pragma GCC unroll 8
      for (size_t r = 0; r < MR; ++r) {
        const __m256i as = _mm256_xor_si256(_mm256_set1_epi32(static_cast<int>(a[r * ldq])), flip);
        const __m256i aa = _mm256_abs_epi8(as);
        const __m256i p0 = _mm256_maddubs_epi16(aa, _mm256_sign_epi8(b0, as));
        const __m256i p1 = _mm256_maddubs_epi16(aa, _mm256_sign_epi8(b1, as));
        acc0[r] = _mm256_add_epi32(acc0[r], _mm256_madd_epi16(p0, ones));
        acc1[r] = _mm256_add_epi32(acc1[r], _mm256_madd_epi16(p1, ones));
      }
    }
    const __m256 s0 = _mm256_loadu_ps(w_scale + c0), s1 = _mm256_loadu_ps(w_scale + c0 + 8);
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r) {
      float* out = y + r * ldy + c0;
      const __m256 xs = _mm256_set1_ps(x_scale[r]);
      __m256 v0 = _mm256_mul_ps(_mm256_cvtepi32_ps(acc0[r]), _mm256_mul_ps(xs, s0));
      __m256 v1 = _mm256_mul_ps(_mm256_cvtepi32_ps(acc1[r]), _mm256_mul_ps(xs, s1));
      if (!first) v0 = _mm256_add_ps(v0, _mm256_loadu_ps(out)), v1 = _mm256_add_ps(v1, _mm256_loadu_ps(out + 8));
      if (bias) {
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(bias + c0));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(bias + c0 + 8));
      }
      _mm256_storeu_ps(out, v0);
      _mm256_storeu_ps(out + 8, v1);
    }
  }
}

}  // namespace

// quantize_rows_portable's values (x · 127 / max rounded to nearest even, + 128), 32 at a time
// as quantize_row_avx512 takes 64: the saturating packs never clip, a dword permutation puts the
// packs' 128-bit lanes back in order, xor 0x80 adds the offset.
__attribute__((target("avx2,fma"))) void quantize_rows_avx2(const float* x, size_t rows, size_t k, uint32_t* quads,
                                                            float* scale) {
  const size_t Q = (k + 3) / 4;
  const __m256i magnitude = _mm256_set1_epi32(static_cast<int>(kMagnitudeMask));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7), flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (size_t m = 0; m < rows; ++m) {
    const float* src = x + m * k;
    __m256i vmax = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 8 <= k; i += 8) {
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
      vmax = _mm256_max_epu32(_mm256_and_si256(bits, magnitude), vmax);
    }
    alignas(32) uint32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), vmax);
    uint32_t top = 0;
    for (uint32_t v : lanes) top = std::max(top, v);
    for (; i < k; ++i) top = std::max(top, magnitude_bits(src[i]));
    const RowScale rs = row_scale(top);
    scale[m] = rs.scale;
    auto* dst = reinterpret_cast<uint8_t*>(quads + m * Q);
    if (!rs.finite) {
      std::memset(dst, 128, Q * 4);
      continue;
    }
    const float inv = rs.inv;
    const __m256 vinv = _mm256_set1_ps(inv);
    for (i = 0; i + 32 <= k; i += 32) {
      const __m256i a = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(src + i), vinv));
      const __m256i b = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(src + i + 8), vinv));
      const __m256i c = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(src + i + 16), vinv));
      const __m256i d = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(src + i + 24), vinv));
      const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                          _mm256_xor_si256(_mm256_permutevar8x32_epi32(bytes, order), flip));
    }
    quantize_tail([&](size_t j) { return src[j]; }, i, k, inv, dst);
  }
}

namespace {

// Any number of rows: blocks of 3, the last rows through the block of their exact count; a ragged
// last panel (fewer than 64 columns) through the portable loop.
constexpr size_t kAvx2Rows = 3;
template <bool Next>
__attribute__((target("avx2,fma"), flatten)) void int8_block_avx2(
    const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1, const int32_t* offset,
    const float* x_scale, const float* w_scale, const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  if (cols < kCols) {
    int8_block_portable(xq, ldq, rows, panel, q0, q1, offset, x_scale, w_scale, bias, first, y, ldy, cols);
    return;
  }
  using Fn = void (*)(const uint32_t*, size_t, const int8_t*, size_t, size_t, const float*, const float*,
                      const float*, bool, float*, size_t, size_t, size_t);
  static constexpr Fn kByRows[kAvx2Rows] = {nullptr, int8_block_avx2_rows<1, Next>, int8_block_avx2_rows<2, Next>};
  const size_t blocks = (rows + kAvx2Rows - 1) / kAvx2Rows;
  size_t r = 0;
  for (; r + kAvx2Rows <= rows; r += kAvx2Rows)
    int8_block_avx2_rows<kAvx2Rows, Next>(xq + r * ldq, ldq, panel, q0, q1, x_scale + r, w_scale, bias, first,
                                          y + r * ldy, ldy, r / kAvx2Rows, blocks);
  if (r < rows)
    kByRows[rows - r](xq + r * ldq, ldq, panel, q0, q1, x_scale + r, w_scale, bias, first, y + r * ldy, ldy,
                      r / kAvx2Rows, blocks);
}

}  // namespace

Int8Kernel avx2_int8_kernel(bool next) {
  return {next ? int8_block_avx2<true> : int8_block_avx2<false>, nullptr, quantize_rows_avx2, kAvx2Rows, "AVX2", next};
}

}  // namespace roberta::kernels::int8_impl
#endif
