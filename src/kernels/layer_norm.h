#pragma once
#include <cstddef>

namespace roberta::kernels {

// out (rows, cols) = LayerNorm(x + residual) * gamma + beta, row by row; residual may be null.
// Mean and variance are accumulated in double. out may alias x or residual.
void layer_norm(const float* x, const float* residual, const float* gamma, const float* beta, double eps, size_t rows,
                size_t cols, float* out);

}  // namespace roberta::kernels
