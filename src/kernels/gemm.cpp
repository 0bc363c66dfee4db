#include "gemm.h"

#include <cblas.h>

#include <algorithm>

#include "util/thread_pool.h"

namespace roberta::kernels {

void linear(float* y, size_t ldy, const float* x, const float* w, const float* bias, size_t M, size_t N, size_t K) {
  if (M == 0 || N == 0) return;
  const std::shared_ptr<ThreadPool> pool_ref = ThreadPool::global();
  ThreadPool& pool = *pool_ref;
  // Enough work per part to be worth a thread: ~1 MFLOP.
  const size_t max_parts = std::max<size_t>(1, (2 * M * N * K) / (1 << 20));
  const size_t parts = std::min<size_t>({pool.num_threads(), max_parts, (N + 15) / 16});
  const size_t chunk = ((N + parts - 1) / parts + 15) / 16 * 16;
  pool.parallel_for(parts, [&](size_t p) {
    const size_t n0 = p * chunk, n1 = std::min(N, n0 + chunk);
    if (n0 >= n1) return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(M), static_cast<int>(n1 - n0),
                static_cast<int>(K), 1.0f, x, static_cast<int>(K), w + n0 * K, static_cast<int>(K), 0.0f, y + n0,
                static_cast<int>(ldy));
    if (bias)
      for (size_t m = 0; m < M; ++m) {
        float* row = y + m * ldy;
        for (size_t n = n0; n < n1; ++n) row[n] += bias[n];
      }
  });
}

}  // namespace roberta::kernels
