#include "activations.h"

#include <algorithm>
#include <cmath>

#include "../thread_pool.h"
#include "vector_math.h"

namespace roberta::kernels {

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kInvSqrt2 = 0.7071067811865476f;

template <Activation A>
inline float act(float x) {
  if constexpr (A == Activation::kGelu) return 0.5f * x * (1.0f + vmath::erf(x * kInvSqrt2));
  if constexpr (A == Activation::kGeluTanh)
    return 0.5f * x * (1.0f + vmath::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
  if constexpr (A == Activation::kGelu10) return std::clamp(0.5f * x * (1.0f + std::erf(x * kInvSqrt2)), -10.0f, 10.0f);
  if constexpr (A == Activation::kQuickGelu) return x * vmath::sigmoid(1.702f * x);
  if constexpr (A == Activation::kLaplace) {
    constexpr float mu = 0.707107f, sigma = 0.282095f;
    return 0.5f * (1.0f + std::erf((x - mu) / (sigma * 1.4142135623730951f)));
  }
  if constexpr (A == Activation::kRelu) return x > 0 ? x : 0.0f;
  if constexpr (A == Activation::kRelu2) return x > 0 ? x * x : 0.0f;
  if constexpr (A == Activation::kRelu6) return std::clamp(x, 0.0f, 6.0f);
  if constexpr (A == Activation::kLeakyRelu) return x > 0 ? x : 0.01f * x;
  if constexpr (A == Activation::kSilu) return x * vmath::sigmoid(x);
  if constexpr (A == Activation::kTanh) return vmath::tanh(x);
  if constexpr (A == Activation::kSigmoid) return vmath::sigmoid(x);
  if constexpr (A == Activation::kMish) return x * std::tanh(x > 20.0f ? x : std::log1p(std::exp(x)));
  if constexpr (A == Activation::kLinear) return x;
  return x;
}

// row[c] = act(row[c] + bias[c]) for one row; compiled per instruction set.
template <Activation A>
ROBERTA_VECTOR_CLONES void apply_row(float* __restrict row, const float* __restrict bias, size_t cols) {
  if (bias)
    for (size_t c = 0; c < cols; ++c) row[c] = act<A>(row[c] + bias[c]);
  else
    for (size_t c = 0; c < cols; ++c) row[c] = act<A>(row[c]);
}

template <Activation A>
void apply(float* x, const float* bias, size_t rows, size_t cols) {
  const size_t rows_per_task = std::max<size_t>(1, 32768 / std::max<size_t>(cols, 1));
  const size_t tasks = (rows + rows_per_task - 1) / rows_per_task;
  ThreadPool::global().parallel_for(tasks, [&](size_t task) {
    for (size_t r = task * rows_per_task; r < std::min(rows, (task + 1) * rows_per_task); ++r)
      apply_row<A>(x + r * cols, bias, cols);
  });
}
}  // namespace

float activate(Activation a, float x) {
  switch (a) {
    case Activation::kGelu: return act<Activation::kGelu>(x);
    case Activation::kGeluTanh: return act<Activation::kGeluTanh>(x);
    case Activation::kGelu10: return act<Activation::kGelu10>(x);
    case Activation::kQuickGelu: return act<Activation::kQuickGelu>(x);
    case Activation::kLaplace: return act<Activation::kLaplace>(x);
    case Activation::kRelu: return act<Activation::kRelu>(x);
    case Activation::kRelu2: return act<Activation::kRelu2>(x);
    case Activation::kRelu6: return act<Activation::kRelu6>(x);
    case Activation::kLeakyRelu: return act<Activation::kLeakyRelu>(x);
    case Activation::kSilu: return act<Activation::kSilu>(x);
    case Activation::kTanh: return act<Activation::kTanh>(x);
    case Activation::kSigmoid: return act<Activation::kSigmoid>(x);
    case Activation::kMish: return act<Activation::kMish>(x);
    case Activation::kLinear: return x;
  }
  return x;
}

void bias_activation(float* x, const float* bias, size_t rows, size_t cols, Activation a) {
  switch (a) {
    case Activation::kGelu: return apply<Activation::kGelu>(x, bias, rows, cols);
    case Activation::kGeluTanh: return apply<Activation::kGeluTanh>(x, bias, rows, cols);
    case Activation::kGelu10: return apply<Activation::kGelu10>(x, bias, rows, cols);
    case Activation::kQuickGelu: return apply<Activation::kQuickGelu>(x, bias, rows, cols);
    case Activation::kLaplace: return apply<Activation::kLaplace>(x, bias, rows, cols);
    case Activation::kRelu: return apply<Activation::kRelu>(x, bias, rows, cols);
    case Activation::kRelu2: return apply<Activation::kRelu2>(x, bias, rows, cols);
    case Activation::kRelu6: return apply<Activation::kRelu6>(x, bias, rows, cols);
    case Activation::kLeakyRelu: return apply<Activation::kLeakyRelu>(x, bias, rows, cols);
    case Activation::kSilu: return apply<Activation::kSilu>(x, bias, rows, cols);
    case Activation::kTanh: return apply<Activation::kTanh>(x, bias, rows, cols);
    case Activation::kSigmoid: return apply<Activation::kSigmoid>(x, bias, rows, cols);
    case Activation::kMish: return apply<Activation::kMish>(x, bias, rows, cols);
    case Activation::kLinear: return apply<Activation::kLinear>(x, bias, rows, cols);
  }
}

}  // namespace roberta::kernels
