// fp32 <-> bf16 conversions (kernels/packed_gemm.h) and the bf16 weight's packing: rounding to
// nearest even as torch does, vectorised where the CPU allows.
#include "kernels/packed_gemm.h"

#include "kernels/intrinsics.h"

#include <cstring>
#include <vector>

#include "kernels/gemm/bf16_convert.h"
#include "kernels/gemm/fp32_blocks.h"
#include "kernels/isa.h"
#include "util/thread_pool.h"

namespace roberta::kernels {
using gemm_impl::widen_bf16;

uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

namespace {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
// to_bf16's integer rounding, 16 values at a time (not vcvtneps2bf16, which flushes denormals).
__attribute__((target("avx512f"))) void to_bf16_row_avx512(const float* x, size_t n, uint16_t* out) {
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
  const __m512i half = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x40);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i bits = _mm512_loadu_si512(x + i), high = _mm512_srli_epi32(bits, 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, magnitude), inf);
    const __m512i rounded =
        _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(half, _mm512_and_si512(high, one))), 16);
    const __m512i h = _mm512_mask_blend_epi32(nan, rounded, _mm512_or_si512(high, quiet));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi32_epi16(h));
  }
  for (; i < n; ++i) out[i] = to_bf16(x[i]);
}
#endif

#if defined(__x86_64__)
// to_bf16 of the 8 floats at x, each in the low half of its 32-bit lane (the magnitude compared as
// a signed integer: both sides are >= 0).
__attribute__((target("avx2"), always_inline)) inline __m256i to_bf16_avx2(const float* x) {
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)), high = _mm256_srli_epi32(bits, 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF)),
                                         _mm256_set1_epi32(0x7F800000));
  const __m256i round = _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), _mm256_and_si256(high, _mm256_set1_epi32(1)));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, round), 16);
  return _mm256_blendv_epi8(rounded, _mm256_or_si256(high, _mm256_set1_epi32(0x40)), nan);
}

// to_bf16_row's values 8 at a time.
__attribute__((target("avx2"))) void to_bf16_row_avx2(const float* x, size_t n, uint16_t* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    // (each 32-bit lane holds a value below 2^16: packus keeps it; the permute joins the two halves)
    const __m256i h = to_bf16_avx2(x + i), packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(h, h), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_castsi256_si128(packed));
  }
  for (; i < n; ++i) out[i] = to_bf16(x[i]);
}

// n floats rounded as to_bf16 and widened back to fp32, 8 at a time.
__attribute__((target("avx2"))) void round_bf16_widened_avx2(const float* x, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_slli_epi32(to_bf16_avx2(x + i), 16));
  for (; i < n; ++i) out[i] = widen_bf16(to_bf16(x[i]));
}

// n bf16 values widened to fp32, 8 at a time.
__attribute__((target("avx2"))) void widen_bf16_avx2(const uint16_t* h, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_slli_epi32(v, 16));
  }
  for (; i < n; ++i) out[i] = widen_bf16(h[i]);
}
#endif
}  // namespace

namespace gemm_impl {

// bf16 pairs (rows, q) with row stride ldp widened to fp32: out (rows, 2q), row stride 2q.
void widen_bf16_rows(const uint32_t* pairs, size_t ldp, size_t rows, size_t q, float* out) {
  for (size_t m = 0; m < rows; ++m) {
    const auto* h = reinterpret_cast<const uint16_t*>(pairs + m * ldp);
#if defined(__x86_64__)
    static const bool avx2 = usable_isa() >= Isa::kAvx2;
    if (avx2) {
      widen_bf16_avx2(h, 2 * q, out + m * 2 * q);
      continue;
    }
#endif
    for (size_t i = 0; i < 2 * q; ++i) out[m * 2 * q + i] = widen_bf16(h[i]);
  }
}

// x (rows, k), row stride ldx, rounded as to_bf16 and widened back to fp32: out (rows, 2q), row
// stride 2q, q = (k + 1) / 2 (an odd k padded with a zero): the values widen_bf16_rows gives from
// to_bf16_pairs's pairs, in one pass.
void round_bf16_widened_rows(const float* x, size_t ldx, size_t rows, size_t k, float* out) {
  const size_t ldo = (k + 1) / 2 * 2;
  for (size_t m = 0; m < rows; ++m) {
    const float* src = x + m * ldx;
    float* dst = out + m * ldo;
#if defined(__x86_64__)
    static const bool avx2 = usable_isa() >= Isa::kAvx2;
    if (avx2)
      round_bf16_widened_avx2(src, k, dst);
    else
#endif
      for (size_t i = 0; i < k; ++i) dst[i] = widen_bf16(to_bf16(src[i]));
    if (k % 2) dst[k] = 0.0f;
  }
}
}  // namespace gemm_impl

void to_bf16_row(const float* x, size_t n, uint16_t* out) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
  static const bool avx512 = usable_isa() >= Isa::kAvx512;
  if (avx512) return to_bf16_row_avx512(x, n, out);
#endif
#if defined(__x86_64__)
  static const bool avx2 = usable_isa() >= Isa::kAvx2;
  if (avx2) return to_bf16_row_avx2(x, n, out);
#endif
  for (size_t i = 0; i < n; ++i) out[i] = to_bf16(x[i]);
}

PackedWeightBf16::PackedWeightBf16(const float* w, size_t n, size_t k)
    : n_(n), k_(k), data_(static_cast<uint16_t*>(::operator new[](bytes(), std::align_val_t(64)))) {
  ThreadPool::global()->parallel_for(panels(), [&](size_t p) {
    uint32_t* dst = reinterpret_cast<uint32_t*>(data_.get() + p * k_pairs() * kPanel * 2);
    std::memset(dst, 0, k_pairs() * kPanel * sizeof(uint32_t));
    std::vector<uint16_t> row(k_pairs() * 2, 0);  // k padded with a zero to an even count
    for (size_t j = 0; j < kPanel && p * kPanel + j < n; ++j) {
      to_bf16_row(w + (p * kPanel + j) * k, k, row.data());
      for (size_t q = 0; q < k_pairs(); ++q) std::memcpy(dst + q * kPanel + j, row.data() + 2 * q, 4);
    }
  });
}

namespace gemm_impl {

// x (rows, k), row stride ldx -> bf16 pairs (rows, (k + 1) / 2), row stride ldp, each row by
// to_bf16_row; k padded with a zero to an even count.
void to_bf16_pairs_by_rows(const float* x, size_t ldx, size_t rows, size_t k, uint32_t* out, size_t ldp) {
  for (size_t m = 0; m < rows; ++m) {
    auto* dst = reinterpret_cast<uint16_t*>(out + m * ldp);
    to_bf16_row(x + m * ldx, k, dst);
    if (k % 2) dst[k] = 0;
  }
}
}  // namespace gemm_impl

}  // namespace roberta::kernels
