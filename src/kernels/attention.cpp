#include "attention.h"

#include <cblas.h>

#include <cmath>
#include <vector>

#include "util/scratch.h"
#include "util/thread_pool.h"
#include "vector_math.h"

namespace roberta::kernels {

namespace {
// row (n) = softmax(row), with 8 partial maxima and sums so the loops vectorise.
ROBERTA_VECTOR_CLONES void softmax_row(float* __restrict row, size_t n) {
  float lane_max[8];
  for (int k = 0; k < 8; ++k) lane_max[k] = row[0];
  size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) lane_max[k] = row[j + k] > lane_max[k] ? row[j + k] : lane_max[k];
  float max = lane_max[0];
  for (int k = 1; k < 8; ++k) max = lane_max[k] > max ? lane_max[k] : max;
  for (; j < n; ++j) max = row[j] > max ? row[j] : max;
  for (j = 0; j < n; ++j) row[j] = vmath::exp(row[j] - max);
  double lane_sum[8] = {};
  j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) lane_sum[k] += row[j + k];
  double sum = 0;
  for (; j < n; ++j) sum += row[j];
  for (int k = 0; k < 8; ++k) sum += lane_sum[k];
  const float inv = static_cast<float>(1.0 / sum);
  for (j = 0; j < n; ++j) row[j] *= inv;
}
}  // namespace

void self_attention(float* ctx, const float* qkv, const size_t* offsets, size_t num_sequences, size_t heads,
                    size_t head_size) {
  const size_t H = heads * head_size, ld = 3 * H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  ThreadPool::global()->parallel_for(num_sequences * heads, [&](size_t task) {
    const size_t s = task / heads, h = task % heads;
    const size_t begin = offsets[s], L = offsets[s + 1] - begin;
    if (L == 0) return;
    thread_local std::vector<float> scores_buffer;
    const util::Scratch<float> scores(scores_buffer, L * L);
    const float* q = qkv + begin * ld + h * head_size;
    const float* k = q + H;
    const float* v = q + 2 * H;
    const int n = static_cast<int>(L), d = static_cast<int>(head_size);
    // scores (L, L) = scale · Q Kᵀ
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, scale, q, static_cast<int>(ld), k,
                static_cast<int>(ld), 0.0f, scores.data(), n);
    for (size_t i = 0; i < L; ++i) softmax_row(scores.data() + i * L, L);
    // ctx (L, d) = P V
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, n, 1.0f, scores.data(), n, v, static_cast<int>(ld),
                0.0f, ctx + begin * H + h * head_size, static_cast<int>(H));
  });
}

}  // namespace roberta::kernels
