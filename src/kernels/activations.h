#pragma once
#include <cstddef>

#include "activation.h"

namespace roberta::kernels {

// Scalar definition of each activation (Hugging Face's ACT2FN), in float.
float activate(Activation act, float x);

// x (rows, cols) = act(x + bias) in place; bias (cols) may be null. Rows are split over the pool.
void bias_activation(float* x, const float* bias, size_t rows, size_t cols, Activation act);

// x (rows, cols) with row stride ldx = act(x), on the calling thread (for fused epilogues).
void activation_rows(float* x, size_t ldx, size_t rows, size_t cols, Activation act);

}  // namespace roberta::kernels
