#pragma once
#include <cstddef>

namespace roberta::kernels {

// out (rows, cols) = LayerNorm(x + residual) * gamma + beta, row by row; residual may be null.
// Mean and variance are accumulated in double. out may alias x or residual (the sum is formed in
// a scratch row before out is written).
void layer_norm(float* out, const float* x, const float* residual, const float* gamma, const float* beta, size_t rows,
                size_t cols, double eps);

}  // namespace roberta::kernels
