// The attention of any head size, with relative positions or without: three OpenBLAS products per
// (sequence, head) and a softmax over each row of scores. Runs where the register-block kernels do
// not (heads other than 64, relative positions, CPUs without AVX2).
#include <cblas.h>

#include <cmath>
#include <vector>

#include "kernels/attention/blocks.h"
#include "kernels/vector_math.h"
#include "util/scratch.h"

namespace roberta::kernels::attention_impl {

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

void attention_head_general(float* out, size_t ldo, const float* q, const float* k, const float* v, size_t ld,
                            size_t L, size_t head_size, float scale, const RelativePositions& relative) {
  thread_local std::vector<float> scores_buffer;
  const util::Scratch<float> scores(scores_buffer, L * L);
  const int n = static_cast<int>(L), d = static_cast<int>(head_size);
  if (!relative.distance) {
    // scores (L, L) = scale · Q Kᵀ
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, scale, q, static_cast<int>(ld), k,
                static_cast<int>(ld), 0.0f, scores.data(), n);
  } else {
    // scores = scale · (Q Kᵀ + relative terms), as transformers adds them before scaling.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, 1.0f, q, static_cast<int>(ld), k,
                static_cast<int>(ld), 0.0f, scores.data(), n);
    // E_L (2L - 1, d): the distances -(L-1) .. L-1, i.e. rows P - L .. P + L - 2 of E;
    // row j of E_L is distance j - (L - 1). qe (L, 2L - 1) = Q E_Lᵀ, and ke likewise for K.
    const size_t W = 2 * L - 1;
    const float* e = relative.distance + (relative.max_positions - L) * head_size;
    thread_local std::vector<float> rel_buffer;
    const util::Scratch<float> rel(rel_buffer, 2 * L * W);
    float* qe = rel.data();
    float* ke = rel.data() + L * W;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, static_cast<int>(W), d, 1.0f, q, static_cast<int>(ld), e,
                d, 0.0f, qe, static_cast<int>(W));
    if (relative.key_query)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, static_cast<int>(W), d, 1.0f, k, static_cast<int>(ld),
                  e, d, 0.0f, ke, static_cast<int>(W));
    for (size_t l = 0; l < L; ++l) {
      float* row = scores.data() + l * L;
      for (size_t r = 0; r < L; ++r) {
        const size_t j = l + L - 1 - r;  // distance l - r, shifted into [0, 2L - 1)
        float sum = row[r] + qe[l * W + j];
        if (relative.key_query) sum += ke[r * W + j];
        row[r] = sum / std::sqrt(static_cast<float>(head_size));
      }
    }
  }
  for (size_t i = 0; i < L; ++i) softmax_row(scores.data() + i * L, L);
  // ctx (L, d) = P V
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, n, 1.0f, scores.data(), n, v, static_cast<int>(ld),
              0.0f, out, static_cast<int>(ldo));
}

}  // namespace roberta::kernels::attention_impl
