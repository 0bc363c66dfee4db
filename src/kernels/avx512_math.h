#pragma once
// Element-wise math in AVX-512 intrinsics, for kernels that dispatch on the CPU themselves
// (vector_math.h is the auto-vectorised counterpart). Call only where usable_isa() >= kAvx512.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

namespace roberta::kernels {

// exp(x) for 16 floats: the same Cephes polynomial as vmath::exp (about 1 ulp), scaled by 2^n with
// vscalefps; x is clamped at -87.3 (exp = 1.2e-38) below; NaN gives NaN (vmaxps returns its second
// operand where one is NaN), as PyTorch's softmax of a NaN score is NaN.
__attribute__((target("avx512f"))) inline __m512 exp_avx512(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-87.3f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// GELU (erf form) written with AVX-512 intrinsics, erf from Abramowitz & Stegun 7.1.28:
// erf(a) = 1 - 1 / (1 + a1 a + ... + a6 a^6)^16 for a >= 0 (|error| <= 3e-7; a clamped at 6, where
// erf is 1 in float), the reciprocal as rcp14 plus a Newton step. No exp and no division: faster
// than 7.1.26, which needs an exp (docs/performance.md#figures-behind-the-code); |error| < 6e-7 of
// max(1, |gelu|) against double precision (tests/activations_test.cpp). The AMX products' epilogue
// (gemm/amx_blocks.h) applies it too, to values in registers: the same function, the same results.
__attribute__((target("avx512f"))) inline __m512 gelu_avx512(__m512 x) {
  const __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(0.7071067811865476f));
  const __m512 a = _mm512_min_ps(_mm512_abs_ps(z), _mm512_set1_ps(6.0f));
  __m512 p = _mm512_set1_ps(0.0000430638f);
  p = _mm512_fmadd_ps(p, a, _mm512_set1_ps(0.0002765672f));
  p = _mm512_fmadd_ps(p, a, _mm512_set1_ps(0.0001520143f));
  p = _mm512_fmadd_ps(p, a, _mm512_set1_ps(0.0092705272f));
  p = _mm512_fmadd_ps(p, a, _mm512_set1_ps(0.0422820123f));
  p = _mm512_fmadd_ps(p, a, _mm512_set1_ps(0.0705230784f));
  p = _mm512_fmadd_ps(p, a, _mm512_set1_ps(1.0f));
  p = _mm512_mul_ps(p, p);  // p^16
  p = _mm512_mul_ps(p, p);
  p = _mm512_mul_ps(p, p);
  p = _mm512_mul_ps(p, p);
  __m512 t = _mm512_rcp14_ps(p);
  t = _mm512_mul_ps(t, _mm512_fnmadd_ps(p, t, _mm512_set1_ps(2.0f)));
  const __m512 y = _mm512_sub_ps(_mm512_set1_ps(1.0f), t);  // erf(|z|)
  const __m512 erf = _mm512_castsi512_ps(_mm512_or_si512(
      _mm512_castps_si512(y), _mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(INT32_MIN))));
  const __m512 half_x = _mm512_mul_ps(x, _mm512_set1_ps(0.5f));
  return _mm512_fmadd_ps(half_x, erf, half_x);
}

// 16 values rounded to bf16 as to_bf16_pairs rounds activations on CPUs with AVX512-BF16
// (vcvtneps2bf16: nearest even), stored where m is set: for products that write bf16 from their
// epilogue. Call only where the CPU has AVX512-BF16.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) inline void store_bf16(uint16_t* out, __mmask16 m,
                                                                                       __m512 v) {
  _mm256_mask_storeu_epi16(out, m, (__m256i)_mm512_cvtneps_pbh(v));
}

}  // namespace roberta::kernels
#endif
