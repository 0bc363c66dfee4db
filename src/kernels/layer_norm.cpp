#include "layer_norm.h"

#include "intrinsics.h"

#include <cmath>
#include <vector>

#include "isa.h"
#include "util/thread_pool.h"
#include "vector_math.h"

namespace roberta::kernels {

namespace {
// out = LayerNorm(x + residual) for one row; 8 partial double sums so the loops vectorise.
// x and residual may be out itself, so they are not __restrict: only the scratch row `sum` is.
ROBERTA_VECTOR_CLONES void layer_norm_row(float* out, const float* x, const float* residual,
                                          const float* __restrict gamma, const float* __restrict beta,
                                          float* __restrict sum, size_t cols, double eps) {
  double lane[8] = {};
  size_t c = 0;
  for (; c + 8 <= cols; c += 8)
    for (int k = 0; k < 8; ++k) {
      sum[c + k] = residual ? x[c + k] + residual[c + k] : x[c + k];
      lane[k] += sum[c + k];
    }
  double total = 0;
  for (; c < cols; ++c) {
    sum[c] = residual ? x[c] + residual[c] : x[c];
    total += sum[c];
  }
  for (int k = 0; k < 8; ++k) total += lane[k];
  const double mean = total / static_cast<double>(cols);
  double var_lane[8] = {};
  double var = 0;
  c = 0;
  for (; c + 8 <= cols; c += 8)
    for (int k = 0; k < 8; ++k) {
      const double d = sum[c + k] - mean;
      var_lane[k] += d * d;
    }
  for (; c < cols; ++c) var += (sum[c] - mean) * (sum[c] - mean);
  for (int k = 0; k < 8; ++k) var += var_lane[k];
  var /= static_cast<double>(cols);
  const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
  const float m = static_cast<float>(mean);
  for (c = 0; c < cols; ++c) out[c] = (sum[c] - m) * inv * gamma[c] + beta[c];
}

#if defined(__x86_64__)
// The same row with AVX-512 intrinsics, much faster than the loop above
// (docs/performance.md#figures-behind-the-code). The sums are accumulated in 4 float lanes of 16,
// each lane summing cols / 64 values (12 for H = 768), and the 64 partial sums are added in
// double; the deviation from the mean is formed in float, as the loop above forms the sum x +
// residual in float.
__attribute__((target("avx512f"))) inline __mmask16 tail_mask(size_t left) {
  return left >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << left) - 1);
}

// The 16 floats of a, as 2 x 8 doubles added.
__attribute__((target("avx512f"), always_inline)) inline __m512d wide_pairs(__m512 a) {
  return _mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(a)),
                       _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1))));
}

// The 64 float partial sums in a0..a3, added in double (8 lanes at a time, then across the lanes).
__attribute__((target("avx512f"), always_inline)) inline double sum_lanes(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  return _mm512_reduce_add_pd(
      _mm512_add_pd(_mm512_add_pd(wide_pairs(a0), wide_pairs(a1)), _mm512_add_pd(wide_pairs(a2), wide_pairs(a3))));
}

// sum[c, c + 16) = x + residual there (masked by m), returned.
__attribute__((target("avx512f"), always_inline)) inline __m512 load_sum(const float* x, const float* residual,
                                                                       float* sum, size_t c, __mmask16 m) {
  __m512 v = _mm512_maskz_loadu_ps(m, x + c);
  if (residual) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, residual + c));
  _mm512_mask_storeu_ps(sum + c, m, v);
  return v;
}

// The accumulators are four named registers: as an array indexed at run time (i = (i + 1) & 3)
// GCC kept them on the stack, a store and a load per vector.
__attribute__((target("avx512f"))) void layer_norm_row_avx512(float* out, const float* x, const float* residual,
                                                              const float* __restrict gamma,
                                                              const float* __restrict beta, float* __restrict sum,
                                                              size_t cols, double eps) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  size_t c = 0;
  for (; c + 64 <= cols; c += 64) {
    a0 = _mm512_add_ps(a0, load_sum(x, residual, sum, c, 0xFFFF));
    a1 = _mm512_add_ps(a1, load_sum(x, residual, sum, c + 16, 0xFFFF));
    a2 = _mm512_add_ps(a2, load_sum(x, residual, sum, c + 32, 0xFFFF));
    a3 = _mm512_add_ps(a3, load_sum(x, residual, sum, c + 48, 0xFFFF));
  }
  for (; c < cols; c += 16) a0 = _mm512_add_ps(a0, load_sum(x, residual, sum, c, tail_mask(cols - c)));
  const double mean = sum_lanes(a0, a1, a2, a3) / static_cast<double>(cols);
  const __m512 vm = _mm512_set1_ps(static_cast<float>(mean));
  a0 = a1 = a2 = a3 = _mm512_setzero_ps();
  for (c = 0; c + 64 <= cols; c += 64) {
    const __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(sum + c), vm);
    const __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(sum + c + 16), vm);
    const __m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(sum + c + 32), vm);
    const __m512 d3 = _mm512_sub_ps(_mm512_loadu_ps(sum + c + 48), vm);
    a0 = _mm512_fmadd_ps(d0, d0, a0);
    a1 = _mm512_fmadd_ps(d1, d1, a1);
    a2 = _mm512_fmadd_ps(d2, d2, a2);
    a3 = _mm512_fmadd_ps(d3, d3, a3);
  }
  for (; c < cols; c += 16) {
    const __mmask16 m = tail_mask(cols - c);
    const __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, sum + c), vm);
    a0 = _mm512_fmadd_ps(d, d, a0);
  }
  const double var = sum_lanes(a0, a1, a2, a3) / static_cast<double>(cols);
  const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / std::sqrt(var + eps)));
  for (c = 0; c < cols; c += 16) {
    const __mmask16 m = tail_mask(cols - c);
    const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, sum + c), vm), inv);
    _mm512_mask_storeu_ps(out + c, m,
                          _mm512_fmadd_ps(d, _mm512_maskz_loadu_ps(m, gamma + c), _mm512_maskz_loadu_ps(m, beta + c)));
  }
}
#endif
}  // namespace

void layer_norm_rows(float* out, const float* x, const float* residual, const float* gamma, const float* beta,
                     size_t rows, size_t cols, double eps) {
  [[maybe_unused]] static const bool avx512 = usable_isa() >= Isa::kAvx512;
  thread_local std::vector<float> sum;
  sum.resize(cols);
  for (size_t r = 0; r < rows; ++r)
#if defined(__x86_64__)
    if (avx512)
      layer_norm_row_avx512(out + r * cols, x + r * cols, residual ? residual + r * cols : nullptr, gamma, beta,
                            sum.data(), cols, eps);
    else
#endif
      layer_norm_row(out + r * cols, x + r * cols, residual ? residual + r * cols : nullptr, gamma, beta, sum.data(),
                     cols, eps);
}

void layer_norm(float* out, const float* x, const float* residual, const float* gamma, const float* beta, size_t rows,
                size_t cols, double eps) {
  const size_t rows_per_task = std::max<size_t>(1, 16384 / std::max<size_t>(cols, 1));
  const size_t tasks = (rows + rows_per_task - 1) / rows_per_task;
  ThreadPool::global()->parallel_for(tasks, [&](size_t task) {
    const size_t r0 = task * rows_per_task, r1 = std::min(rows, r0 + rows_per_task);
    layer_norm_rows(out + r0 * cols, x + r0 * cols, residual ? residual + r0 * cols : nullptr, gamma, beta, r1 - r0,
                    cols, eps);
  });
}

}  // namespace roberta::kernels
