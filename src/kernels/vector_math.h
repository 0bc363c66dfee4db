#pragma once
// Element-wise math written so that the compiler vectorises it (no calls, no branches): exp,
// erf, tanh and sigmoid in float. Kernels that use these are compiled for several instruction
// sets and picked at run time (ROBERTA_VECTOR_CLONES), so the binary runs on any x86-64.
#include <bit>
#include <cstdint>

#if defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define ROBERTA_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ROBERTA_VECTOR_CLONES
#endif

namespace roberta::kernels::vmath {

// exp(x), about 1 ulp (Cephes' expf polynomial); 0 below -87.3, clamped above 88.7; NaN gives NaN.
inline float exp(float x) {
  const bool underflow = x < -87.3f;
  x = x > 88.7f ? 88.7f : x;
  x = x < -87.3f ? -87.3f : x;
  // round(x / ln 2) in the low bits of `shifted` (1.5 · 2^23 + n, whose ulp is 1): n as an integer
  // from its bits, not a float-to-int conversion, which a NaN would make undefined
  const float shifted = x * 1.44269504088896341f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t biased = std::bit_cast<int32_t>(shifted) - 0x4B400000 + 127;  // n + 127
  const float scale = std::bit_cast<float>(static_cast<uint32_t>(biased) << 23);
  return underflow ? 0.0f : p * scale;
}

// erf(x) with Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), the formula PyTorch's vectorised
// CPU kernels use for GELU.
inline float erf(float x) {
  const float a = x < 0 ? -x : x;
  const float t = 1.0f / (0.3275911f * a + 1.0f);
  const float r = ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t + 0.254829592f);
  const float y = 1.0f - r * t * exp(-a * a);
  return x < 0 ? -y : y;
}

inline float sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }

// tanh(x) = 1 - 2 / (exp(2x) + 1); absolute error about 1e-7.
inline float tanh(float x) {
  const float c = x > 9.0f ? 9.0f : (x < -9.0f ? -9.0f : x);
  return 1.0f - 2.0f / (exp(2.0f * c) + 1.0f);
}

}  // namespace roberta::kernels::vmath
