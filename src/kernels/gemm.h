#pragma once
#include <cstddef>

namespace roberta::kernels {

// y is (M, N) with row stride ldy, x is (M, K), w is (N, K) as torch.nn.Linear stores it:
// y = x · wᵀ (+ bias). The N columns are split over the thread pool; each part is one
// single-threaded OpenBLAS sgemm.
void linear(float* y, size_t ldy, const float* x, const float* w, const float* bias, size_t M, size_t N, size_t K);

}  // namespace roberta::kernels
