#pragma once
#include <cstddef>

namespace roberta::kernels {

// out (rows, cols) = LayerNorm(x + residual) * gamma + beta, row by row; residual may be null.
// Mean and variance: partial sums of a few elements each (8 in double on the portable path, 64 in
// float with AVX-512), added up in double. out may alias x or residual (the sum is formed in
// a scratch row before out is written).
void layer_norm(float* out, const float* x, const float* residual, const float* gamma, const float* beta, size_t rows,
                size_t cols, double eps);
// The same on this thread only (layer_norm splits the rows over the thread pool).
void layer_norm_rows(float* out, const float* x, const float* residual, const float* gamma, const float* beta,
                     size_t rows, size_t cols, double eps);

}  // namespace roberta::kernels
