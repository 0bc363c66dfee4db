#include "layer_norm.h"

#include <cmath>
#include <vector>

#include "../thread_pool.h"

namespace roberta::kernels {

void layer_norm(const float* x, const float* residual, const float* gamma, const float* beta, double eps, size_t rows,
                size_t cols, float* out) {
  const size_t rows_per_task = std::max<size_t>(1, 16384 / std::max<size_t>(cols, 1));
  const size_t tasks = (rows + rows_per_task - 1) / rows_per_task;
  ThreadPool::global().parallel_for(tasks, [&](size_t task) {
    std::vector<float> sum(cols);
    for (size_t r = task * rows_per_task; r < std::min(rows, (task + 1) * rows_per_task); ++r) {
      const float* xr = x + r * cols;
      const float* rr = residual ? residual + r * cols : nullptr;
      double mean = 0;
      for (size_t c = 0; c < cols; ++c) {
        sum[c] = rr ? xr[c] + rr[c] : xr[c];
        mean += sum[c];
      }
      mean /= static_cast<double>(cols);
      double var = 0;
      for (size_t c = 0; c < cols; ++c) {
        const double d = sum[c] - mean;
        var += d * d;
      }
      var /= static_cast<double>(cols);
      const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
      const float m = static_cast<float>(mean);
      float* o = out + r * cols;
      for (size_t c = 0; c < cols; ++c) o[c] = (sum[c] - m) * inv * gamma[c] + beta[c];
    }
  });
}

}  // namespace roberta::kernels
