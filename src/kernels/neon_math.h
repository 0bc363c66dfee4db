#pragma once
// Element-wise math in NEON intrinsics for 64-bit ARM (avx512_math.h is the AVX-512 counterpart),
// where GCC does not vectorise vector_math.h's loops (its GELU and exp loops stay scalar on aarch64).
#if defined(__aarch64__)
#include <arm_neon.h>

namespace roberta::kernels {

// exp(x) as vmath::exp computes it (Cephes' expf polynomial, about 1 ulp): 0 below -87.3 (and for
// -inf), clamped above 88.7; NaN gives NaN.
inline float32x4_t exp_neon(float32x4_t x) {
  const uint32x4_t underflow = vcltq_f32(x, vdupq_n_f32(-87.3f));
  x = vmaxq_f32(vminq_f32(x, vdupq_n_f32(88.7f)), vdupq_n_f32(-87.3f));  // (vminq and vmaxq keep a NaN)
  // round(x / ln 2) in the low bits of `shifted` (1.5 · 2^23 + n, whose ulp is 1)
  const float32x4_t shifted = vfmaq_n_f32(vdupq_n_f32(12582912.0f), x, 1.44269504088896341f);
  const float32x4_t n = vsubq_f32(shifted, vdupq_n_f32(12582912.0f));
  float32x4_t r = vfmsq_n_f32(x, n, 0.693359375f);
  r = vfmsq_n_f32(r, n, -2.12194440e-4f);
  float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
  p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
  p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
  p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), vmulq_f32(p, r), r);
  const int32x4_t biased = vaddq_s32(vsubq_s32(vreinterpretq_s32_f32(shifted), vdupq_n_s32(0x4B400000)),
                                     vdupq_n_s32(127));  // n + 127
  const float32x4_t scale = vreinterpretq_f32_s32(vshlq_n_s32(biased, 23));
  return vbslq_f32(underflow, vdupq_n_f32(0.0f), vmulq_f32(p, scale));
}

// GELU (erf form) as gelu_avx512 computes it: erf from Abramowitz & Stegun 7.1.28,
// erf(a) = 1 - 1 / (1 + a1 a + ... + a6 a^6)^16 for a >= 0 (|error| <= 3e-7; a clamped at 6, where
// erf is 1 in float), the reciprocal by a division (NEON's estimate has 8 bits). NaN gives NaN.
inline float32x4_t gelu_neon(float32x4_t x) {
  const float32x4_t z = vmulq_n_f32(x, 0.7071067811865476f);
  const float32x4_t a = vminq_f32(vabsq_f32(z), vdupq_n_f32(6.0f));
  float32x4_t p = vdupq_n_f32(0.0000430638f);
  p = vfmaq_f32(vdupq_n_f32(0.0002765672f), p, a);
  p = vfmaq_f32(vdupq_n_f32(0.0001520143f), p, a);
  p = vfmaq_f32(vdupq_n_f32(0.0092705272f), p, a);
  p = vfmaq_f32(vdupq_n_f32(0.0422820123f), p, a);
  p = vfmaq_f32(vdupq_n_f32(0.0705230784f), p, a);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, a);
  p = vmulq_f32(p, p);  // p^16
  p = vmulq_f32(p, p);
  p = vmulq_f32(p, p);
  p = vmulq_f32(p, p);
  const float32x4_t y = vsubq_f32(vdupq_n_f32(1.0f), vdivq_f32(vdupq_n_f32(1.0f), p));  // erf(|z|)
  const uint32x4_t sign = vandq_u32(vreinterpretq_u32_f32(z), vdupq_n_u32(0x80000000u));
  const float32x4_t erf = vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(y), sign));
  const float32x4_t half_x = vmulq_n_f32(x, 0.5f);
  return vfmaq_f32(half_x, half_x, erf);
}

}  // namespace roberta::kernels
#endif
