// int8 weights quantized and packed (PackedWeightInt8), and the portable kernel and quantizer that
// run on any CPU (kernels/packed_gemm_int8.h).
#include "kernels/packed_gemm_int8.h"

#include "kernels/intrinsics.h"

#include <cstring>
#include <vector>

#include "kernels/gemm/int8_blocks.h"
#include "kernels/isa.h"
#include "util/thread_pool.h"

namespace roberta::kernels {
using namespace int8_impl;

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

namespace int8_impl {

namespace {
// A block of at most kMaxRows rows, in plain C++.
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
}  // namespace

// Any number of rows, kMaxRows at a time.
void int8_block_portable(const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1,
                         const int32_t* offset, const float* x_scale, const float* w_scale, const float* bias,
                         bool first, float* y, size_t ldy, size_t cols) {
  for (size_t r = 0; r < rows; r += kMaxRows)
    int8_block_portable_rows(xq + r * ldq, ldq, std::min(kMaxRows, rows - r), panel, q0, q1, offset, x_scale + r,
                             w_scale, bias, first, y + r * ldy, ldy, cols);
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

}  // namespace int8_impl
}  // namespace roberta::kernels
