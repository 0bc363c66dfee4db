// The int8 product on AVX-512: AVX512-VNNI (vpdpbusd), the same with the AMX kernel's fused
// epilogue (GELU, bf16 output), AVX512BW without VNNI; and the AVX-512 row quantizers.
#include "kernels/gemm/int8_blocks.h"
#if defined(ROBERTA_HAVE_VNNI_KERNEL)
#include <cstring>

#include "kernels/avx512_math.h"
#include "kernels/intrinsics.h"
#include "kernels/panel_prefetch.h"

namespace roberta::kernels::int8_impl {
namespace {

// What an int8 block's epilogue needs of the columns [c0, c0 + 16) of a panel of `cols` columns:
// their mask (0: none of them is in the panel), offsets, weight scales and bias (zero if none).
struct EpilogueColumns {
  __mmask16 m;
  __m512i o;
  __m512 s, bv;
};

__attribute__((target("avx512f,avx512bw"), always_inline)) inline EpilogueColumns epilogue_columns(
    size_t c0, const int32_t* offset, const float* w_scale, const float* bias, size_t cols) {
  const __mmask16 m = cols <= c0 ? 0 : cols >= c0 + 16 ? 0xFFFF : static_cast<__mmask16>((1u << (cols - c0)) - 1);
  if (!m) return {0, _mm512_setzero_si512(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  return {m, _mm512_maskz_loadu_epi32(m, offset + c0), _mm512_maskz_loadu_ps(m, w_scale + c0),
          bias ? _mm512_maskz_loadu_ps(m, bias + c0) : _mm512_setzero_ps()};
}

// A row's sums dequantized: x_scale · w_scale · (sum - offset).
__attribute__((target("avx512f,avx512bw"), always_inline)) inline __m512 dequantize(const EpilogueColumns& e,
                                                                                    __m512i sum, float x_scale) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sum, e.o)), _mm512_mul_ps(_mm512_set1_ps(x_scale), e.s));
}

// The block's columns [c0, c0 + 16) dequantized, added to y's earlier slices unless `first`, plus
// the bias, stored to y (the columns below `cols` only).
template <size_t MR>
__attribute__((target("avx512f,avx512bw"), always_inline)) inline void int8_epilogue(
    const __m512i (&c)[MR], size_t c0, const int32_t* offset, const float* x_scale, const float* w_scale,
    const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  const EpilogueColumns e = epilogue_columns(c0, offset, w_scale, bias, cols);
  const __mmask16 m = e.m;
  if (!m) return;
#pragma GCC unroll 8
  for (size_t r = 0; r < MR; ++r) {
    __m512 v = dequantize(e, c[r], x_scale[r]);
    if (!first) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, y + r * ldy + c0));
    if (bias) v = _mm512_add_ps(v, e.bv);
    _mm512_mask_storeu_ps(y + r * ldy + c0, m, v);
  }
}

// int8_epilogue on the four 16-column quarters of an MR x 64 block.
template <size_t MR>
__attribute__((target("avx512f,avx512bw"), always_inline)) inline void int8_block_epilogue(
    const __m512i (&c0)[MR], const __m512i (&c1)[MR], const __m512i (&c2)[MR], const __m512i (&c3)[MR],
    const int32_t* offset, const float* x_scale, const float* w_scale, const float* bias, bool first, float* y,
    size_t ldy, size_t cols) {
  int8_epilogue<MR>(c0, 0, offset, x_scale, w_scale, bias, first, y, ldy, cols);
  int8_epilogue<MR>(c1, 16, offset, x_scale, w_scale, bias, first, y, ldy, cols);
  int8_epilogue<MR>(c2, 32, offset, x_scale, w_scale, bias, first, y, ldy, cols);
  int8_epilogue<MR>(c3, 48, offset, x_scale, w_scale, bias, first, y, ldy, cols);
}

// MR x 64 block in 4 * MR zmm accumulators. MR is the block's exact row count and the loops are
// unrolled, and the accumulators are four small arrays rather than one (MR, 4) array: GCC keeps
// those in registers, while the larger array it leaves on the stack, storing it every k step (the
// kernel then runs at a fraction of vpdpbusd's rate). Next: the block's share of the panel's next
// k slice (NextSlicePrefetch); without it (Prefetch::kAhead, by CPU model: panel_prefetch()) no
// software prefetch, and only the first block of a chunk reads the panel from memory.
template <size_t MR, bool Next>
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) inline void int8_vnni_sums(
    __m512i (&c0)[MR], __m512i (&c1)[MR], __m512i (&c2)[MR], __m512i (&c3)[MR], const uint32_t* xq, size_t ldq,
    const int8_t* panel, size_t q0, size_t q1, size_t block, size_t blocks) {
#pragma GCC unroll 8
  for (size_t r = 0; r < MR; ++r) c0[r] = c1[r] = c2[r] = c3[r] = _mm512_setzero_si512();
  NextSlicePrefetch<4> prefetch(panel, q0, q1, block, blocks);
  const uint32_t* a = xq + q0;
  for (size_t q = q0; q < q1; ++q, ++a) {
    if constexpr (Next) prefetch.step();
    const int8_t* b = panel + q * 256;
    const __m512i b0 = _mm512_load_si512(b), b1 = _mm512_load_si512(b + 64), b2 = _mm512_load_si512(b + 128),
                  b3 = _mm512_load_si512(b + 192);
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r) {
      const __m512i av = _mm512_set1_epi32(static_cast<int>(a[r * ldq]));
      c0[r] = _mm512_dpbusd_epi32(c0[r], av, b0);
      c1[r] = _mm512_dpbusd_epi32(c1[r], av, b1);
      c2[r] = _mm512_dpbusd_epi32(c2[r], av, b2);
      c3[r] = _mm512_dpbusd_epi32(c3[r], av, b3);
    }
  }
}

template <size_t MR, bool Next>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void int8_block_vnni_rows(
    const uint32_t* xq, size_t ldq, const int8_t* panel, size_t q0, size_t q1, const int32_t* offset,
    const float* x_scale, const float* w_scale, const float* bias, bool first, float* y, size_t ldy, size_t cols,
    size_t block, size_t blocks) {
  __m512i c0[MR], c1[MR], c2[MR], c3[MR];
  int8_vnni_sums<MR, Next>(c0, c1, c2, c3, xq, ldq, panel, q0, q1, block, blocks);
  int8_block_epilogue<MR>(c0, c1, c2, c3, offset, x_scale, w_scale, bias, first, y, ldy, cols);
}

// Any number of rows (a row chunk): blocks of kMaxRows (int8_row_blocks).
template <bool Next>
__attribute__((target("avx512f,avx512bw,avx512vnni"), flatten)) void int8_block_vnni(
    const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1, const int32_t* offset,
    const float* x_scale, const float* w_scale, const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  static constexpr Int8RowsFn kByRows[kMaxRows] = {nullptr,
                                                   int8_block_vnni_rows<1, Next>,
                                                   int8_block_vnni_rows<2, Next>,
                                                   int8_block_vnni_rows<3, Next>,
                                                   int8_block_vnni_rows<4, Next>,
                                                   int8_block_vnni_rows<5, Next>};
  int8_row_blocks<kMaxRows, int8_block_vnni_rows<kMaxRows, Next>>(kByRows, xq, ldq, rows, panel, q0, q1, offset,
                                                                  x_scale, w_scale, bias, first, y, ldy, cols);
}

// int8_epilogue's values for columns [c0, c0 + 16), then GELU where `gelu`, written to y, or with y16
// set rounded to bf16 there instead (row stride ldy bf16 values; one k slice only). Compiled for
// AVX512-BF16, which the plain VNNI kernel may not have.
template <size_t MR>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"), always_inline)) inline void int8_fused_epilogue(
    const __m512i (&c)[MR], size_t c0, const int32_t* offset, const float* x_scale, const float* w_scale,
    const float* bias, bool first, float* y, size_t ldy, size_t cols, bool gelu, uint16_t* y16) {
  const EpilogueColumns e = epilogue_columns(c0, offset, w_scale, bias, cols);
  const __mmask16 m = e.m;
  if (!m) return;
  const __m512 bv = e.bv;
#pragma GCC unroll 8
  for (size_t r = 0; r < MR; ++r) {
    __m512 v = dequantize(e, c[r], x_scale[r]);
    if (y16) {
      if (bias) v = _mm512_add_ps(v, bv);
      if (gelu) v = gelu_avx512(v);
      store_bf16(y16 + r * ldy + c0, m, v);
      continue;
    }
    if (!first) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, y + r * ldy + c0));
    if (bias) v = _mm512_add_ps(v, bv);
    if (gelu) v = gelu_avx512(v);
    _mm512_mask_storeu_ps(y + r * ldy + c0, m, v);
  }
}

// The VNNI kernel with the AMX kernel's epilogue (AmxInt8Fn), for CPUs with AVX512-BF16 whose CPU
// model's row asks for it (runtime/cpu.h): GELU applied to the values in registers (`gelu`, with the
// last k slice), and with y16 set the values rounded to bf16 there (row stride ldy) instead of y, so
// that a product whose reader takes bf16 (act(intermediate) for the output product) writes half
// the bytes and no pass converts them. The same values as int8_block_vnni's followed by the
// activation's pass and to_bf16_pairs, bit for bit.
template <size_t MR, bool Next>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16"))) void int8_block_vnni_fused_rows(
    const uint32_t* xq, size_t ldq, const int8_t* panel, size_t q0, size_t q1, const int32_t* offset,
    const float* x_scale, const float* w_scale, const float* bias, bool first, float* y, size_t ldy, size_t cols,
    bool gelu, uint16_t* y16, size_t block, size_t blocks) {
  __m512i c0[MR], c1[MR], c2[MR], c3[MR];
  int8_vnni_sums<MR, Next>(c0, c1, c2, c3, xq, ldq, panel, q0, q1, block, blocks);
  int8_fused_epilogue<MR>(c0, 0, offset, x_scale, w_scale, bias, first, y, ldy, cols, gelu, y16);
  int8_fused_epilogue<MR>(c1, 16, offset, x_scale, w_scale, bias, first, y, ldy, cols, gelu, y16);
  int8_fused_epilogue<MR>(c2, 32, offset, x_scale, w_scale, bias, first, y, ldy, cols, gelu, y16);
  int8_fused_epilogue<MR>(c3, 48, offset, x_scale, w_scale, bias, first, y, ldy, cols, gelu, y16);
}

// Any number of rows (a row chunk), kMaxRows at a time, the last rows through the block of their
// count. (next_panel: the next-slice prefetch already asks for it.)
template <bool Next>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16"), flatten)) void int8_block_vnni_fused(
    const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1, const int32_t* offset,
    const float* x_scale, const float* w_scale, const float* bias, bool first, float* y, size_t ldy, size_t cols,
    bool gelu, uint16_t* y16, const void* /*next_panel*/) {
  using RowsFn = void (*)(const uint32_t*, size_t, const int8_t*, size_t, size_t, const int32_t*, const float*,
                          const float*, const float*, bool, float*, size_t, size_t, bool, uint16_t*, size_t, size_t);
  static constexpr RowsFn kByRows[kMaxRows] = {
      nullptr, int8_block_vnni_fused_rows<1, Next>, int8_block_vnni_fused_rows<2, Next>,
      int8_block_vnni_fused_rows<3, Next>, int8_block_vnni_fused_rows<4, Next>, int8_block_vnni_fused_rows<5, Next>};
  const size_t blocks = (rows + kMaxRows - 1) / kMaxRows;
  size_t r = 0;
  for (; r + kMaxRows <= rows; r += kMaxRows)
    int8_block_vnni_fused_rows<kMaxRows, Next>(xq + r * ldq, ldq, panel, q0, q1, offset, x_scale + r, w_scale, bias,
                                               first, y ? y + r * ldy : nullptr, ldy, cols, gelu,
                                               y16 ? y16 + r * ldy : nullptr, r / kMaxRows, blocks);
  if (r < rows)
    kByRows[rows - r](xq + r * ldq, ldq, panel, q0, q1, offset, x_scale + r, w_scale, bias, first,
                      y ? y + r * ldy : nullptr, ldy, cols, gelu, y16 ? y16 + r * ldy : nullptr, r / kMaxRows, blocks);
}

// AVX-512 without VNNI (CPUs from before AVX512-VNNI): the AVX2 kernel's signed-byte products (x
// flipped back to its signed q, its sign moved to the weight; vpmaddubsw, then vpmaddwd into 32
// bits: no pair saturates, no offset) on 64-byte registers, the whole 64-column panel a pass.
// AVX-512 has no vpsignb: the weight is negated where q < 0 by a subtraction under the mask of q's
// sign bits (vpmovb2m). q = 0 gives |q| = 0, whatever the weight. MR x 64 in 4 * MR accumulators,
// MR = 4: with the four weight vectors, the row's |q|, its mask and the temporaries, 5 rows would
// fill all 32 registers.
// Next: the block's share of the panel's next k slice (NextSlicePrefetch), as the VNNI kernel's.
constexpr size_t kAvx512BwRows = 4;
alignas(64) constexpr int32_t kNoOffset[kCols] = {};
template <size_t MR, bool Next>
__attribute__((target("avx512f,avx512bw"))) void int8_block_avx512bw_rows(
    const uint32_t* xq, size_t ldq, const int8_t* panel, size_t q0, size_t q1, const int32_t*, const float* x_scale,
    const float* w_scale, const float* bias, bool first, float* y, size_t ldy, size_t cols, size_t block,
    size_t blocks) {
  __m512i c0[MR], c1[MR], c2[MR], c3[MR];
#pragma GCC unroll 8
  for (size_t r = 0; r < MR; ++r) c0[r] = c1[r] = c2[r] = c3[r] = _mm512_setzero_si512();
  const __m512i ones = _mm512_set1_epi16(1), flip = _mm512_set1_epi8(static_cast<char>(0x80)),
                zero = _mm512_setzero_si512();
  NextSlicePrefetch<4> prefetch(panel, q0, q1, block, blocks);
  const uint32_t* a = xq + q0;
  for (size_t q = q0; q < q1; ++q, ++a) {
    if constexpr (Next) prefetch.step();
    const int8_t* b = panel + q * 256;
    const __m512i b0 = _mm512_load_si512(b), b1 = _mm512_load_si512(b + 64), b2 = _mm512_load_si512(b + 128),
                  b3 = _mm512_load_si512(b + 192);
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r) {
      const __m512i as = _mm512_xor_si512(_mm512_set1_epi32(static_cast<int>(a[r * ldq])), flip);
      const __m512i aa = _mm512_abs_epi8(as);
      const __mmask64 negative = _mm512_movepi8_mask(as);
      auto product = [&](__m512i w) __attribute__((target("avx512f,avx512bw"), always_inline)) {
        const __m512i p = _mm512_maddubs_epi16(aa, _mm512_mask_sub_epi8(w, negative, zero, w));
        return _mm512_madd_epi16(p, ones);
      };
      c0[r] = _mm512_add_epi32(c0[r], product(b0));
      c1[r] = _mm512_add_epi32(c1[r], product(b1));
      c2[r] = _mm512_add_epi32(c2[r], product(b2));
      c3[r] = _mm512_add_epi32(c3[r], product(b3));
    }
  }
  int8_block_epilogue<MR>(c0, c1, c2, c3, kNoOffset, x_scale, w_scale, bias, first, y, ldy, cols);
}

// Any number of rows: blocks of kAvx512BwRows (int8_row_blocks).
template <bool Next>
__attribute__((target("avx512f,avx512bw"), flatten)) void int8_block_avx512bw(
    const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1, const int32_t* offset,
    const float* x_scale, const float* w_scale, const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  static constexpr Int8RowsFn kByRows[kAvx512BwRows] = {nullptr, int8_block_avx512bw_rows<1, Next>,
                                                        int8_block_avx512bw_rows<2, Next>,
                                                        int8_block_avx512bw_rows<3, Next>};
  int8_row_blocks<kAvx512BwRows, int8_block_avx512bw_rows<kAvx512BwRows, Next>>(
      kByRows, xq, ldq, rows, panel, q0, q1, offset, x_scale, w_scale, bias, first, y, ldy, cols);
}

// One row whose largest magnitude has bits `top`: round(x · 127 / max) + 128 as bytes (k values;
// zeros, i.e. 128, up to the quad; all zeros where the row is not finite), x's 16 values at i from
// load(i) and value i from at(i); returns the row's scale.
template <class Load, class At>
__attribute__((target("avx512f,avx512bw"), always_inline)) inline float quantize_row_avx512(uint32_t top, size_t k,
                                                                                          const Load& load,
                                                                                          const At& at,
                                                                                          uint8_t* dst) {
  const RowScale rs = row_scale(top);
  if (!rs.finite) {
    std::memset(dst, 128, (k + 3) / 4 * 4);
    return rs.scale;
  }
  const float s = rs.scale, inv = rs.inv;
  const __m512 vinv = _mm512_set1_ps(inv);
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127), off = _mm512_set1_epi32(128);
  // 64 at a time: |x| · 127 / max rounds into [-127, 127], so the saturating packs never clip;
  // the packs interleave 128-bit lanes, which one dword permutation puts back in order, and
  // xor 0x80 adds the offset 128 to a signed byte.
  const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  size_t i = 0;
  for (; i + 64 <= k; i += 64) {
    const __m512i a = _mm512_cvtps_epi32(_mm512_mul_ps(load(i), vinv));
    const __m512i b = _mm512_cvtps_epi32(_mm512_mul_ps(load(i + 16), vinv));
    const __m512i c = _mm512_cvtps_epi32(_mm512_mul_ps(load(i + 32), vinv));
    const __m512i d = _mm512_cvtps_epi32(_mm512_mul_ps(load(i + 48), vinv));
    const __m512i bytes = _mm512_packs_epi16(_mm512_packs_epi32(a, b), _mm512_packs_epi32(c, d));
    _mm512_storeu_si512(dst + i, _mm512_xor_si512(_mm512_permutexvar_epi32(order, bytes), flip));
  }
  for (; i + 16 <= k; i += 16) {
    __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(load(i), vinv));  // round to nearest even
    q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi), off);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm512_cvtepi32_epi8(q));
  }
  quantize_tail(at, i, k, inv, dst);
  return s;
}

// Per row: max |x| (vectorised, on the bits), then round(x · 127 / max) + 128 as bytes.
__attribute__((target("avx512f,avx512bw"))) void quantize_rows_avx512(const float* x, size_t rows, size_t k,
                                                                       uint32_t* quads, float* scale) {
  const size_t Q = (k + 3) / 4;
  for (size_t m = 0; m < rows; ++m) {
    const float* src = x + m * k;
    const __m512i mask = _mm512_set1_epi32(static_cast<int>(kMagnitudeMask));
    __m512i vmax = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 16 <= k; i += 16) vmax = _mm512_max_epu32(vmax, _mm512_and_si512(_mm512_loadu_si512(src + i), mask));
    uint32_t top = _mm512_reduce_max_epu32(vmax);
    for (; i < k; ++i) top = std::max(top, magnitude_bits(src[i]));
    scale[m] = quantize_row_avx512(
        top, k, [&](size_t j) __attribute__((target("avx512f"))) { return _mm512_loadu_ps(src + j); },
        [&](size_t j) { return src[j]; }, reinterpret_cast<uint8_t*>(quads + m * Q));
  }
}

}  // namespace

// The same from bf16 values, widened exactly to fp32. The row's max |value| is taken on the bf16
// bits with the sign cleared, as quantize_rows_avx512 takes it on fp32's (the same maximum,
// infinities and NaNs included), 32 at a time.
__attribute__((target("avx512f,avx512bw"))) void quantize_bf16_rows_avx512(const uint32_t* pairs, size_t ldp,
                                                                            size_t rows, size_t k, uint32_t* quads,
                                                                            float* scale) {
  const size_t Q = (k + 3) / 4;
  const __m512i abs_mask = _mm512_set1_epi16(0x7FFF);
  for (size_t m = 0; m < rows; ++m) {
    const auto* src = reinterpret_cast<const uint16_t*>(pairs + m * ldp);
    __m512i vmax = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 32 <= k; i += 32)
      vmax = _mm512_max_epu16(vmax, _mm512_and_si512(_mm512_loadu_si512(src + i), abs_mask));
    alignas(64) uint16_t lanes[32];
    _mm512_store_si512(lanes, vmax);
    uint16_t top = 0;
    for (uint16_t v : lanes) top = std::max(top, v);
    for (; i < k; ++i) top = std::max<uint16_t>(top, src[i] & 0x7FFF);
    scale[m] = quantize_row_avx512(
        uint32_t{top} << 16, k,
        [&](size_t j) __attribute__((target("avx512f"))) {
          const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + j));
          return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        },
        [&](size_t j) {
          const uint32_t bits = uint32_t{src[j]} << 16;
          float v;
          std::memcpy(&v, &bits, 4);
          return v;
        },
        reinterpret_cast<uint8_t*>(quads + m * Q));
  }
}

Int8Kernel amx_int8_kernel() { return {nullptr, int8_block_amx, quantize_rows_avx512, kAmxBlockRows, "AMX-INT8"}; }

Int8Kernel vnni_fused_int8_kernel(bool next) {
  return {nullptr, next ? int8_block_vnni_fused<true> : int8_block_vnni_fused<false>, quantize_rows_avx512, kMaxRows,
          "AVX512-VNNI", next};
}

Int8Kernel vnni_int8_kernel(bool next) {
  return {next ? int8_block_vnni<true> : int8_block_vnni<false>, nullptr, quantize_rows_avx512, kMaxRows,
          "AVX512-VNNI", next};
}

Int8Kernel avx512bw_int8_kernel(bool next) {
  return {next ? int8_block_avx512bw<true> : int8_block_avx512bw<false>, nullptr, quantize_rows_avx512,
          kAvx512BwRows, "AVX512BW", next};
}

}  // namespace roberta::kernels::int8_impl
#endif
