#include "packed_gemm_int8.h"

#include "intrinsics.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "activations.h"
#include "amx_gemm.h"
#include "avx512_math.h"
#include "block_loop.h"
#include "isa.h"
#include "packed_gemm.h"
#include "panel_prefetch.h"
#include "roberta/error.h"
#include "runtime/plan.h"
#include "util/scratch.h"
#include "util/thread_pool.h"

namespace roberta::kernels {

PackedWeightInt8::PackedWeightInt8(const float* w, size_t n, size_t k)
    : n_(n), k_(k), data_(static_cast<int8_t*>(::operator new[](panels() * k_quads() * kPanel * 4, std::align_val_t(64)))),
      scales_(n) {
  const size_t Q = k_quads(), slices = (Q + kSliceQuads - 1) / kSliceQuads;
  offsets_.assign(slices * panels() * kPanel, 0);
  ThreadPool::global()->parallel_for(panels(), [&](size_t p) {
    int8_t* dst = data_.get() + p * Q * kPanel * 4;
    std::memset(dst, 0, Q * kPanel * 4);
    std::vector<int8_t> q(Q * 4, 0);  // k padded with zeros to whole quads
    for (size_t j = 0; j < kPanel && p * kPanel + j < n; ++j) {
      const size_t row = p * kPanel + j;
      scales_[row] = quantize_weight_row(w + row * k, k, q.data());
      for (size_t quad = 0; quad < Q; ++quad) {
        const int8_t* v = q.data() + 4 * quad;
        std::memcpy(dst + (quad * kPanel + j) * 4, v, 4);
        offsets_[(quad / kSliceQuads * panels() + p) * kPanel + j] += 128 * (v[0] + v[1] + v[2] + v[3]);
      }
    }
  });
}

namespace {
// A value's magnitude as bits (the sign cleared): as unsigned integers these order as the
// magnitudes do, and an infinity's (0x7F800000) and every NaN's come past all finite values'. The
// quantizers take a row's maximum so, where max on floats would pass over a NaN.
constexpr uint32_t kMagnitudeMask = 0x7FFFFFFF, kInfinityBits = 0x7F800000;
uint32_t magnitude_bits(float v) { return std::bit_cast<uint32_t>(v) & kMagnitudeMask; }

// The scale of a row (weights or activations) from its largest magnitude's bits: max / 127, 1 for
// an all-zero row (inv: 127 / max, at most FLT_MAX: a max below 3.7e-37 would make it infinite, and
// 0 · inf a NaN; 0 for an all-zero row); NaN for a row holding an infinity or a NaN (not finite),
// whose bytes are then all zero: every output the row takes part in is NaN, as fp32's is not
// finite there, rather than finite values made from the row's other entries.
struct RowScale {
  float scale, inv;
  bool finite;
};
// (Inlined into each caller, so it is compiled for the caller's instruction set: called out of line
// from the AVX-512 quantizers, its SSE code slows int8 forward passes down measurably;
// docs/performance.md#figures-behind-the-code.)
__attribute__((always_inline)) inline RowScale row_scale(uint32_t top) {
  if (top >= kInfinityBits) return {std::numeric_limits<float>::quiet_NaN(), 0.0f, false};
  const float amax = std::bit_cast<float>(top);
  if (amax == 0) return {1.0f, 0.0f, true};
  return {amax / 127.0f, std::min(127.0f / amax, std::numeric_limits<float>::max()), true};
}

// A quotient rounded to the nearest integer, ties to even, within [-127, 127]; NaN (0 / 0 in a row
// whose max is so small a denormal that max / 127 is 0) gives 0.
int8_t round_to_int8(float v) {
  const float r = std::nearbyint(v);
  return std::isnan(r) ? 0 : static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
}

// q[i] = round(w[i] / scale) for i from i0 to k (the scalar loop, and the vector loop's tail; inlined
// as row_scale).
__attribute__((always_inline)) inline void round_weight_row(const float* w, size_t i0, size_t k, float scale, int8_t* q) {
  for (size_t i = i0; i < k; ++i) q[i] = round_to_int8(w[i] / scale);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
// The same values as the scalar loops, 16 at a time: the max on the bits is exact in any order, the
// division is IEEE's, roundscale rounds to nearest even as nearbyint does.
__attribute__((target("avx512f"))) float quantize_weight_row_avx512(const float* w, size_t k, int8_t* q) {
  const __m512i mask = _mm512_set1_epi32(static_cast<int>(kMagnitudeMask));
  __m512i vmax = _mm512_setzero_si512();
  size_t i = 0;
  for (; i + 16 <= k; i += 16) vmax = _mm512_max_epu32(_mm512_and_si512(_mm512_loadu_si512(w + i), mask), vmax);
  uint32_t top = _mm512_reduce_max_epu32(vmax);
  for (; i < k; ++i) top = std::max(top, magnitude_bits(w[i]));
  const RowScale rs = row_scale(top);
  if (!rs.finite) {
    std::memset(q, 0, k);
    return rs.scale;
  }
  const float scale = rs.scale;
  const __m512 s = _mm512_set1_ps(scale), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  for (i = 0; i + 16 <= k; i += 16) {
    const __m512 r = _mm512_roundscale_ps(_mm512_div_ps(_mm512_loadu_ps(w + i), s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // max(lo, NaN) and min(hi, NaN) keep the NaN, which converts to 0x80000000, whose low byte is 0.
    const __m512i v = _mm512_cvtps_epi32(_mm512_min_ps(hi, _mm512_max_ps(lo, r)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtepi32_epi8(v));
  }
  round_weight_row(w, i, k, scale, q);
  return scale;
}
#endif
}  // namespace

float quantize_weight_row(const float* w, size_t k, int8_t* q) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
  static const bool avx512 = usable_isa() >= Isa::kAvx512;
  if (avx512) return quantize_weight_row_avx512(w, k, q);
#endif
  uint32_t top = 0;
  for (size_t i = 0; i < k; ++i) top = std::max(top, magnitude_bits(w[i]));
  const RowScale rs = row_scale(top);
  if (!rs.finite) {
    std::memset(q, 0, k);
    return rs.scale;
  }
  round_weight_row(w, 0, k, rs.scale, q);
  return rs.scale;
}

float PackedWeightInt8::dequantized(size_t n, size_t k) const {
  const size_t p = n / kPanel, j = n % kPanel;
  return static_cast<float>(panel(p)[(k / 4) * kPanel * 4 + j * 4 + k % 4]) * scales_[n];
}

namespace {

// One register block of the int8 product over the k quads [q0, q1): y[r][j] (+)= x_scale[r] ·
// w_scale[j] · (sum of byte products - offset[j]) (+ bias after the last slice); a kernel that
// multiplies x's signed q (AVX2, AVX512BW: vpmaddubsw) sums q · w itself and leaves offset aside.
using Int8BlockFn = void (*)(const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1,
                             const int32_t* offset, const float* x_scale, const float* w_scale, const float* bias,
                             bool first, float* y, size_t ldy, size_t cols);

constexpr size_t kMaxRows = 6;
constexpr size_t kCols = PackedWeightInt8::kPanel;

// A register block of exactly its kernel's row count (a template argument: the accumulators then
// stay in registers), the 64-column panel's columns below `cols`; register block `block` of the
// chunk's `blocks`, for its share of the panel prefetch (NextSlicePrefetch).
using Int8RowsFn = void (*)(const uint32_t* xq, size_t ldq, const int8_t* panel, size_t q0, size_t q1,
                            const int32_t* offset, const float* x_scale, const float* w_scale, const float* bias,
                            bool first, float* y, size_t ldy, size_t cols, size_t block, size_t blocks);

// Any number of rows (a row chunk) through blocks of MR rows, Full the block of MR: inlined into the
// loop where the caller is flattened, one call per chunk rather than per block (the call, 14
// arguments per 6 x 64 x 768 block, is a measurable share of the product;
// docs/performance.md#figures-behind-the-code); the last rows through by_rows[n], the block of
// exactly n rows.
template <size_t MR, Int8RowsFn Full>
__attribute__((always_inline)) inline void int8_row_blocks(const Int8RowsFn (&by_rows)[MR], const uint32_t* xq,
                                                           size_t ldq, size_t rows, const int8_t* panel, size_t q0,
                                                           size_t q1, const int32_t* offset, const float* x_scale,
                                                           const float* w_scale, const float* bias, bool first,
                                                           float* y, size_t ldy, size_t cols) {
  const size_t blocks = (rows + MR - 1) / MR;
  size_t r = 0;
  for (; r + MR <= rows; r += MR)
    Full(xq + r * ldq, ldq, panel, q0, q1, offset, x_scale + r, w_scale, bias, first, y + r * ldy, ldy, cols, r / MR,
         blocks);
  if (r < rows)
    by_rows[rows - r](xq + r * ldq, ldq, panel, q0, q1, offset, x_scale + r, w_scale, bias, first, y + r * ldy, ldy,
                      cols, r / MR, blocks);
}

void int8_block_portable_rows(const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1,
                              const int32_t* offset, const float* x_scale, const float* w_scale, const float* bias,
                              bool first, float* y, size_t ldy, size_t cols) {
  int32_t acc[kMaxRows][kCols] = {};
  for (size_t q = q0; q < q1; ++q) {
    const int8_t* b = panel + q * kCols * 4;
    for (size_t r = 0; r < rows; ++r) {
      const uint32_t a = xq[r * ldq + q];
      for (size_t j = 0; j < kCols; ++j)
        for (size_t i = 0; i < 4; ++i) acc[r][j] += static_cast<int32_t>((a >> (8 * i)) & 0xFF) * b[j * 4 + i];
    }
  }
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < cols; ++j) {
      float v = static_cast<float>(acc[r][j] - offset[j]) * (x_scale[r] * w_scale[j]);
      if (!first) v += y[r * ldy + j];
      y[r * ldy + j] = bias ? v + bias[j] : v;
    }
}

// Any number of rows, kMaxRows at a time.
void int8_block_portable(const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1,
                         const int32_t* offset, const float* x_scale, const float* w_scale, const float* bias,
                         bool first, float* y, size_t ldy, size_t cols) {
  for (size_t r = 0; r < rows; r += kMaxRows)
    int8_block_portable_rows(xq + r * ldq, ldq, std::min(kMaxRows, rows - r), panel, q0, q1, offset, x_scale + r,
                             w_scale, bias, first, y + r * ldy, ldy, cols);
}

// dst[i] for i from i0 up to k's whole quads: round(at(i) · inv) (nearest even) + 128 below k, 128
// (a zero) past it: every quantize_rows_* writes the values its vector loops leave this way.
template <class At>
void quantize_tail(const At& at, size_t i0, size_t k, float inv, uint8_t* dst) {
  for (size_t i = i0; i < (k + 3) / 4 * 4; ++i) {
    const float q = i < k ? std::clamp(std::nearbyint(at(i) * inv), -127.0f, 127.0f) : 0.0f;
    dst[i] = static_cast<uint8_t>(static_cast<int>(q) + 128);
  }
}

void quantize_rows_portable(const float* x, size_t rows, size_t k, uint32_t* quads, float* scale) {
  const size_t Q = (k + 3) / 4;
  for (size_t m = 0; m < rows; ++m) {
    const float* src = x + m * k;
    uint32_t top = 0;
    for (size_t i = 0; i < k; ++i) top = std::max(top, magnitude_bits(src[i]));
    const RowScale rs = row_scale(top);
    scale[m] = rs.scale;
    if (!rs.finite)
      std::memset(quads + m * Q, 128, Q * 4);
    else
      quantize_tail([&](size_t i) { return src[i]; }, 0, k, rs.inv, reinterpret_cast<uint8_t*>(quads + m * Q));
  }
}

#if defined(__x86_64__)
#define ROBERTA_HAVE_AVX2_INT8_KERNEL 1
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

#endif

// (Apple's clang numbers its versions apart from LLVM's: avxvnni from its 13.)
#if defined(__x86_64__) && (defined(__apple_build_version__) ? __clang_major__ >= 13                  \
                            : defined(__clang__)             ? __clang_major__ >= 12                  \
                                                             : defined(__GNUC__) && __GNUC__ >= 11)
#define ROBERTA_HAVE_AVX_VNNI_KERNEL 1
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
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
#define ROBERTA_HAVE_VNNI_KERNEL 1
// MR x 64 block in 4 * MR zmm accumulators. Every index is a compile-time constant (MR is the
// block's exact row count, the loops are unrolled), so the accumulators live in registers: with a
// runtime row count GCC keeps them on the stack, and the kernel runs at a fraction of vpdpbusd's
// rate (docs/performance.md#figures-behind-the-code).
template <size_t MR>
__attribute__((target("avx512f,avx512bw"), always_inline)) inline void int8_epilogue(
    const __m512i (&c)[MR], size_t c0, const int32_t* offset, const float* x_scale, const float* w_scale,
    const float* bias, bool first, float* y, size_t ldy, size_t cols) {
  const __mmask16 m = cols <= c0 ? 0 : cols >= c0 + 16 ? 0xFFFF : static_cast<__mmask16>((1u << (cols - c0)) - 1);
  if (!m) return;
  const __m512i o = _mm512_maskz_loadu_epi32(m, offset + c0);
  const __m512 s = _mm512_maskz_loadu_ps(m, w_scale + c0);
  const __m512 bv = bias ? _mm512_maskz_loadu_ps(m, bias + c0) : _mm512_setzero_ps();
#pragma GCC unroll 8
  for (size_t r = 0; r < MR; ++r) {
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(c[r], o)), _mm512_mul_ps(_mm512_set1_ps(x_scale[r]), s));
    if (!first) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, y + r * ldy + c0));
    if (bias) v = _mm512_add_ps(v, bv);
    _mm512_mask_storeu_ps(y + r * ldy + c0, m, v);
  }
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
  int8_epilogue<MR>(c0, 0, offset, x_scale, w_scale, bias, first, y, ldy, cols);
  int8_epilogue<MR>(c1, 16, offset, x_scale, w_scale, bias, first, y, ldy, cols);
  int8_epilogue<MR>(c2, 32, offset, x_scale, w_scale, bias, first, y, ldy, cols);
  int8_epilogue<MR>(c3, 48, offset, x_scale, w_scale, bias, first, y, ldy, cols);
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
// set rounded to bf16 there instead (row stride ldy bf16 values; one k slice only). (int8_epilogue's
// arithmetic written again: this one is compiled for AVX512-BF16, which the plain VNNI kernel may
// not have, so neither can inline the other.)
template <size_t MR>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"), always_inline)) inline void int8_fused_epilogue(
    const __m512i (&c)[MR], size_t c0, const int32_t* offset, const float* x_scale, const float* w_scale,
    const float* bias, bool first, float* y, size_t ldy, size_t cols, bool gelu, uint16_t* y16) {
  const __mmask16 m = cols <= c0 ? 0 : cols >= c0 + 16 ? 0xFFFF : static_cast<__mmask16>((1u << (cols - c0)) - 1);
  if (!m) return;
  const __m512i o = _mm512_maskz_loadu_epi32(m, offset + c0);
  const __m512 s = _mm512_maskz_loadu_ps(m, w_scale + c0);
  const __m512 bv = bias ? _mm512_maskz_loadu_ps(m, bias + c0) : _mm512_setzero_ps();
#pragma GCC unroll 8
  for (size_t r = 0; r < MR; ++r) {
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(c[r], o)), _mm512_mul_ps(_mm512_set1_ps(x_scale[r]), s));
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
  int8_epilogue<MR>(c0, 0, kNoOffset, x_scale, w_scale, bias, first, y, ldy, cols);
  int8_epilogue<MR>(c1, 16, kNoOffset, x_scale, w_scale, bias, first, y, ldy, cols);
  int8_epilogue<MR>(c2, 32, kNoOffset, x_scale, w_scale, bias, first, y, ldy, cols);
  int8_epilogue<MR>(c3, 48, kNoOffset, x_scale, w_scale, bias, first, y, ldy, cols);
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
#endif

struct Int8Kernel {
  Int8BlockFn fn;  // (null where fused is set)
  // A product that applies GELU in its epilogue and can write bf16 (AmxInt8Fn): on AMX tiles, or
  // AVX512-VNNI's with AVX512-BF16 where the CPU model's row asks for it; null elsewhere.
  AmxInt8Fn fused;
  void (*quantize)(const float* x, size_t rows, size_t k, uint32_t* quads, float* scale);
  size_t block_rows;  // for_each_block's row blocks: the register block (VNNI), an A tile (AMX)
  const char* name;
  bool prefetches = false;  // fn asks for the panel's next k slice (NextSlicePrefetch)
};

// The kernels below AMX prefetch the panel's next k slice where panel_prefetch() says kNextSlice,
// in products of any size (docs/performance.md). (Asked only where it applies, as the fp32 kernel
// asks: a bad ROBERTA_PREFETCH is then an error where it would decide something, not on AMX or the
// portable loop.)
Int8Kernel pick_int8_kernel() {
#if defined(__x86_64__)
  [[maybe_unused]] const auto next = [] { return panel_prefetch() == Prefetch::kNextSlice; };
#endif
#if defined(ROBERTA_HAVE_VNNI_KERNEL)
  if (usable_isa() >= Isa::kAmx) return {nullptr, int8_block_amx, quantize_rows_avx512, kAmxBlockRows, "AMX-INT8"};
  if (runtime::plan().int8_fused_epilogue)
    return {nullptr, next() ? int8_block_vnni_fused<true> : int8_block_vnni_fused<false>, quantize_rows_avx512,
            kMaxRows, "AVX512-VNNI", next()};
  if (usable_isa() >= Isa::kAvx512Vnni)
    return {next() ? int8_block_vnni<true> : int8_block_vnni<false>, nullptr, quantize_rows_avx512, kMaxRows,
            "AVX512-VNNI", next()};
  // (No CPU has AVX-512 without AVX512-VNNI but with AVX-VNNI: ROBERTA_ISA=avx512 stands for the
  // AVX-512 CPUs from before AVX512-VNNI. A build without these GCC-only kernels takes AVX-VNNI
  // below, where the CPU has it, even there.)
  if (usable_isa() >= Isa::kAvx512)
    return {next() ? int8_block_avx512bw<true> : int8_block_avx512bw<false>, nullptr, quantize_rows_avx512,
            kAvx512BwRows, "AVX512BW", next()};
#endif
#if defined(ROBERTA_HAVE_AVX_VNNI_KERNEL)
  if (avx_vnni_usable())
    return {next() ? int8_block_avx_vnni<true> : int8_block_avx_vnni<false>, nullptr, quantize_rows_avx2, kMaxRows,
            "AVX-VNNI", next()};
#endif
#if defined(ROBERTA_HAVE_AVX2_INT8_KERNEL)
  if (usable_isa() >= Isa::kAvx2)
    return {next() ? int8_block_avx2<true> : int8_block_avx2<false>, nullptr, quantize_rows_avx2, kAvx2Rows, "AVX2",
            next()};
#endif
  return {int8_block_portable, nullptr, quantize_rows_portable, kMaxRows, "portable"};
}

const Int8Kernel& int8_kernel() {
  static const Int8Kernel k = pick_int8_kernel();
  return k;
}

}  // namespace

bool has_vnni_instructions() {
#if defined(ROBERTA_HAVE_VNNI_KERNEL)
  return usable_isa() >= Isa::kAvx512Vnni;
#else
  return false;
#endif
}

bool avx512_int8_kernels_built() {
#if defined(ROBERTA_HAVE_VNNI_KERNEL)
  return true;
#else
  return false;
#endif
}

bool avx_vnni_kernel_built() {
#if defined(ROBERTA_HAVE_AVX_VNNI_KERNEL)
  return true;
#else
  return false;
#endif
}

const char* int8_kernel_name() { return int8_kernel().name; }

bool int8_kernel_prefetches() { return int8_kernel().prefetches; }

bool int8_kernel_fuses_epilogue() { return int8_kernel().fused != nullptr; }

void quantize_rows(const float* x, size_t rows, size_t k, uint32_t* quads, float* scale) {
  int8_kernel().quantize(x, rows, k, quads, scale);
}

void packed_linear(float* y, size_t ldy, const float* x, const PackedWeightInt8& w, const float* bias, size_t M,
                   Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  const size_t K = w.k(), N = w.n(), Q = w.k_quads();
  if (M == 0 || N == 0) return;
  const Int8Kernel& kern = int8_kernel();
  // x quantized once per call (rows split over the pool when there are many): quads and scales.
  thread_local std::vector<uint32_t> xq_buffer;
  thread_local std::vector<float> xs_buffer;
  const util::Scratch<uint32_t> xq(xq_buffer, M * Q);
  const util::Scratch<float> xs(xs_buffer, M);
  uint32_t* xp = xq.data();
  float* sp = xs.data();
  constexpr size_t kConvertRows = 64;
  ThreadPool::global()->parallel_for((M + kConvertRows - 1) / kConvertRows, [&](size_t t) {
    const size_t m0 = t * kConvertRows, rows = std::min(kConvertRows, M - m0);
    kern.quantize(x + m0 * K, rows, K, xp + m0 * Q, sp + m0);
  });
  packed_linear(y, ldy, QuantizedRows{xp, sp}, w, bias, M, act, rows_done, tiles_done);
}

namespace {
// `fn` or `fused` (the other null): the fused product applies GELU itself, on the last k slice.
void packed_linear_with(const Int8BlockFn fn, const AmxInt8Fn fused, size_t block_rows, float* y, size_t ldy,
                        const QuantizedRows& x, const PackedWeightInt8& w, const float* bias, size_t M,
                        Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  const size_t N = w.n(), Q = w.k_quads();
  if (M == 0 || N == 0) return;
  const uint32_t* xp = x.quads;
  const float* sp = x.scales;
  const bool fused_gelu = fused && act == Activation::kGelu;
  for_each_block(
      M, N, Q, PackedWeightInt8::kSliceQuads, block_rows,
      [&](size_t r, size_t rows, size_t p, size_t q0, size_t q1) {
        const size_t col = p * kCols;
        const int32_t* offsets = w.offsets(q0 / PackedWeightInt8::kSliceQuads, p);
        const float* b = bias && q1 == Q ? bias + col : nullptr;
        if (fused)
          fused(xp + r * Q, Q, rows, w.panel(p), q0, q1, offsets, sp + r, w.scales() + col, b, q0 == 0, y + r * ldy + col,
              ldy, std::min(kCols, N - col), fused_gelu && q1 == Q, nullptr,
              p + 1 < w.panels() ? w.panel(p + 1) : nullptr);
        else
          fn(xp + r * Q, Q, rows, w.panel(p), q0, q1, offsets, sp + r, w.scales() + col, b, q0 == 0, y + r * ldy + col,
             ldy, std::min(kCols, N - col));
      },
      [&](size_t m0, size_t m1, size_t c0, size_t c1) {
        if (act != Activation::kLinear && !fused_gelu) activation_rows(y + m0 * ldy + c0, ldy, m1 - m0, c1 - c0, act);
        if (tiles_done) (*tiles_done)(m0, m1, c0, c1);
      },
      kCols, rows_done);
}
}  // namespace

void packed_linear(float* y, size_t ldy, const QuantizedRows& x, const PackedWeightInt8& w, const float* bias,
                   size_t M, Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  const Int8Kernel& kern = int8_kernel();
  packed_linear_with(kern.fn, kern.fused, kern.block_rows, y, ldy, x, w, bias, M, act, rows_done, tiles_done);
}

namespace {
bool bf16_output_shape(const PackedWeightInt8& w, Activation act) {
  return w.n() % 2 == 0 && w.k_quads() <= PackedWeightInt8::kSliceQuads &&
         (act == Activation::kLinear || act == Activation::kGelu);
}

void packed_linear_to_bf16_with(AmxInt8Fn fused, size_t block_rows, uint32_t* out, size_t ldp,
                                const QuantizedRows& x, const PackedWeightInt8& w, const float* bias, size_t M,
                                Activation act, const ColumnGroups& groups) {
  const size_t N = w.n(), Q = w.k_quads();
  if (M == 0 || N == 0) return;
  for_each_block(
      M, N, Q, Q, block_rows,
      [&](size_t r, size_t rows, size_t p, size_t, size_t) {
        const size_t col = p * kCols;  // (a panel lies within a group)
        fused(x.quads + r * Q, Q, rows, w.panel(p), 0, Q, w.offsets(0, p), x.scales + r, w.scales() + col,
            bias ? bias + col : nullptr, true, nullptr, 2 * ldp, std::min(kCols, N - col), act == Activation::kGelu,
            reinterpret_cast<uint16_t*>(out + group_offset(groups, ldp, r, col)),
            p + 1 < w.panels() ? w.panel(p + 1) : nullptr);
      },
      [](size_t, size_t, size_t, size_t) {}, kCols);
}

void check_bf16_output(const PackedWeightInt8& w, Activation act, const char* who) {
  if (!bf16_output_shape(w, act) || !has_bf16_instructions())
    throw Error(std::string(who) + ": needs AVX512-BF16, an even output size, K <= " +
                std::to_string(4 * PackedWeightInt8::kSliceQuads) + " and a linear or GELU activation");
}

// The bf16 values widened to fp32, one row at a time, through quantize_rows_portable.
[[maybe_unused]] void quantize_bf16_rows_portable(const uint32_t* pairs, size_t ldp, size_t rows, size_t k,
                                                  uint32_t* quads, float* scale) {
  const size_t Q = (k + 3) / 4;
  std::vector<float> row(k);
  for (size_t m = 0; m < rows; ++m) {
    const auto* src = reinterpret_cast<const uint16_t*>(pairs + m * ldp);
    for (size_t i = 0; i < k; ++i) {
      const uint32_t bits = uint32_t{src[i]} << 16;
      std::memcpy(&row[i], &bits, 4);
    }
    quantize_rows_portable(row.data(), 1, k, quads + m * Q, scale + m);
  }
}
}  // namespace

bool writes_bf16_output(const PackedWeightInt8& w, Activation act) {
  return int8_kernel().fused && has_bf16_instructions() && bf16_output_shape(w, act);
}

void packed_linear_to_bf16(uint32_t* out, size_t ldp, const QuantizedRows& x, const PackedWeightInt8& w,
                           const float* bias, size_t M, Activation act, const ColumnGroups& groups) {
  const Int8Kernel& kern = int8_kernel();
  if (!kern.fused) throw Error("packed_linear_to_bf16: the int8 product here does not write bf16 (writes_bf16_output)");
  check_bf16_output(w, act, "packed_linear_to_bf16");
  check_column_groups(groups, w.n(), "packed_linear_to_bf16");
  packed_linear_to_bf16_with(kern.fused, kern.block_rows, out, ldp, x, w, bias, M, act, groups);
}

void packed_linear_to_bf16_amx_emulated(uint32_t* out, size_t ldp, const QuantizedRows& x, const PackedWeightInt8& w,
                                        const float* bias, size_t M, Activation act, const ColumnGroups& groups) {
  check_bf16_output(w, act, "packed_linear_to_bf16_amx_emulated");
  check_column_groups(groups, w.n(), "packed_linear_to_bf16_amx_emulated");
  packed_linear_to_bf16_with(int8_block_amx_emulated, kAmxBlockRows, out, ldp, x, w, bias, M, act, groups);
}

void quantize_bf16_rows(const uint32_t* pairs, size_t ldp, size_t rows, size_t k, uint32_t* quads, float* scale) {
#if defined(ROBERTA_HAVE_VNNI_KERNEL)
  static const bool avx512 = usable_isa() >= Isa::kAvx512;
  if (avx512) return quantize_bf16_rows_avx512(pairs, ldp, rows, k, quads, scale);
#endif
  quantize_bf16_rows_portable(pairs, ldp, rows, k, quads, scale);
}

void packed_linear_amx_emulated(float* y, size_t ldy, const QuantizedRows& x, const PackedWeightInt8& w,
                                const float* bias, size_t M, Activation act) {
  packed_linear_with(nullptr, int8_block_amx_emulated, kAmxBlockRows, y, ldy, x, w, bias, M, act, nullptr, nullptr);
}

}  // namespace roberta::kernels
