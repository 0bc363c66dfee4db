#include "layer_norm.h"

#include <cmath>
#include <vector>

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
}  // namespace

void layer_norm(float* out, const float* x, const float* residual, const float* gamma, const float* beta, size_t rows,
                size_t cols, double eps) {
  const size_t rows_per_task = std::max<size_t>(1, 16384 / std::max<size_t>(cols, 1));
  const size_t tasks = (rows + rows_per_task - 1) / rows_per_task;
  ThreadPool::global()->parallel_for(tasks, [&](size_t task) {
    thread_local std::vector<float> sum;
    sum.resize(cols);
    for (size_t r = task * rows_per_task; r < std::min(rows, (task + 1) * rows_per_task); ++r)
      layer_norm_row(out + r * cols, x + r * cols, residual ? residual + r * cols : nullptr, gamma, beta, sum.data(),
                     cols, eps);
  });
}

}  // namespace roberta::kernels
