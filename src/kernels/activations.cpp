#include "activations.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "intrinsics.h"

#include "avx512_math.h"
#include "neon_math.h"

#include "isa.h"
#include "util/thread_pool.h"
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
  // (x <= 0 is false for NaN: NaN stays NaN, as in PyTorch)
  if constexpr (A == Activation::kRelu) return x <= 0 ? 0.0f : x;
  if constexpr (A == Activation::kRelu2) return x <= 0 ? 0.0f : x * x;
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

#if defined(__x86_64__)
// row[c] = gelu(row[c] + bias[c]); bias may be null.
__attribute__((target("avx512f"))) void gelu_row_avx512(float* row, const float* bias, size_t cols) {
  for (size_t c = 0; c < cols; c += 16) {
    const __mmask16 m = cols - c >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (cols - c)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(m, row + c);
    if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + c));
    _mm512_mask_storeu_ps(row + c, m, gelu_avx512(v));
  }
}

bool gelu_uses_avx512() {
  static const bool yes = usable_isa() >= Isa::kAvx512;
  return yes;
}
#endif

#if defined(__aarch64__)
// row[c] = gelu(row[c] + bias[c]); bias may be null. The last cols % 4 through a padded vector.
void gelu_row_neon(float* row, const float* bias, size_t cols) {
  size_t c = 0;
  for (; c + 4 <= cols; c += 4) {
    float32x4_t v = vld1q_f32(row + c);
    if (bias) v = vaddq_f32(v, vld1q_f32(bias + c));
    vst1q_f32(row + c, gelu_neon(v));
  }
  if (c == cols) return;
  float tail[4] = {};
  for (size_t i = c; i < cols; ++i) tail[i - c] = bias ? row[i] + bias[i] : row[i];
  vst1q_f32(tail, gelu_neon(vld1q_f32(tail)));
  for (size_t i = c; i < cols; ++i) row[i] = tail[i - c];
}

bool gelu_uses_neon() {
  static const bool yes = runtime::is_arm_level(usable_isa());
  return yes;
}
#endif

// One row through the fastest code this CPU allows.
template <Activation A>
inline void row_activation(float* row, const float* bias, size_t cols) {
#if defined(__x86_64__)
  if constexpr (A == Activation::kGelu) {
    if (gelu_uses_avx512()) return gelu_row_avx512(row, bias, cols);
  }
#endif
#if defined(__aarch64__)
  if constexpr (A == Activation::kGelu) {
    if (gelu_uses_neon()) return gelu_row_neon(row, bias, cols);
  }
#endif
  apply_row<A>(row, bias, cols);
}

template <Activation A>
void apply(float* x, const float* bias, size_t rows, size_t cols) {
  const size_t rows_per_task = std::max<size_t>(1, 32768 / std::max<size_t>(cols, 1));
  const size_t tasks = (rows + rows_per_task - 1) / rows_per_task;
  ThreadPool::global()->parallel_for(tasks, [&](size_t task) {
    for (size_t r = task * rows_per_task; r < std::min(rows, (task + 1) * rows_per_task); ++r)
      row_activation<A>(x + r * cols, bias, cols);
  });
}

// f(std::integral_constant<Activation, A>{}) for the run-time activation a.
template <typename F>
auto dispatch(Activation a, F&& f) {
  using enum Activation;
  switch (a) {
    case kGelu: return f(std::integral_constant<Activation, kGelu>{});
    case kGeluTanh: return f(std::integral_constant<Activation, kGeluTanh>{});
    case kGelu10: return f(std::integral_constant<Activation, kGelu10>{});
    case kQuickGelu: return f(std::integral_constant<Activation, kQuickGelu>{});
    case kLaplace: return f(std::integral_constant<Activation, kLaplace>{});
    case kRelu: return f(std::integral_constant<Activation, kRelu>{});
    case kRelu2: return f(std::integral_constant<Activation, kRelu2>{});
    case kRelu6: return f(std::integral_constant<Activation, kRelu6>{});
    case kLeakyRelu: return f(std::integral_constant<Activation, kLeakyRelu>{});
    case kSilu: return f(std::integral_constant<Activation, kSilu>{});
    case kTanh: return f(std::integral_constant<Activation, kTanh>{});
    case kSigmoid: return f(std::integral_constant<Activation, kSigmoid>{});
    case kMish: return f(std::integral_constant<Activation, kMish>{});
    case kLinear: break;
  }
  return f(std::integral_constant<Activation, kLinear>{});
}

}  // namespace

float activate(Activation a, float x) {
  return dispatch(a, [x](auto tag) { return act<tag()>(x); });
}

void bias_activation(float* x, const float* bias, size_t rows, size_t cols, Activation a) {
  dispatch(a, [&](auto tag) { apply<tag()>(x, bias, rows, cols); });
}

void activation_rows(float* x, size_t ldx, size_t rows, size_t cols, Activation a) {
  dispatch(a, [&](auto tag) {
    for (size_t r = 0; r < rows; ++r) row_activation<tag()>(x + r * ldx, nullptr, cols);
  });
}

ROBERTA_VECTOR_CLONES bool any_non_finite(const float* v, size_t n) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, v + i, 4);
    bad |= (b & 0x7F800000u) == 0x7F800000u;
  }
  return bad != 0;
}

}  // namespace roberta::kernels
