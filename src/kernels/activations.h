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

// Whether one of v's n values is NaN or infinite (their exponent bits all ones), vectorised for the
// CPU: the model checks all of its outputs with it, and in SSE2 the check is a visible share of a
// fast int8 forward pass (docs/performance.md#figures-behind-the-code).
bool any_non_finite(const float* v, size_t n);

}  // namespace roberta::kernels
