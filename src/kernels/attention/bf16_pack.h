#pragma once
// bf16 attention's packing and softmax, shared by the AVX512-BF16 kernel (bf16_avx512.cpp) and the
// AMX one (amx.cpp). Internal.
#if defined(__x86_64__)
#include "kernels/attention/blocks.h"

namespace roberta::kernels::attention_impl {

// The same with bfloat16 inputs and fp32 sums (AVX512-BF16's vdpbf16ps, twice the products per
// instruction of an fp32 FMA): Q, K, V and the unnormalised probabilities exp(score - max) are
// rounded to bf16 (nearest even); scores, softmax's sums and the context are fp32. Used by the
// bf16 and int8 encoders, whose matrix inputs are rounded at least as coarsely. Pairs of bf16
// travel as one uint32 (low half first), the operand layout of vdpbf16ps.
constexpr size_t kPairs = kHead / 2;  // bf16 pairs per row of Q, K or V


// dst (n / 2 pairs) = bf16(src[0..n)), n a multiple of 16.
ROBERTA_BF16_TARGET inline void to_bf16_pairs(uint32_t* dst, const float* src, size_t n) {
  for (size_t c = 0; c < n; c += 32) {
    const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + c + 16), _mm512_loadu_ps(src + c));
    _mm512_storeu_si512(dst + c / 2, reinterpret_cast<const __m512i&>(h));
  }
}

// 16 bf16 pairs from 32 values: fp32 ones rounded (nearest even), bf16 ones as they are.
ROBERTA_BF16_TARGET inline __m512i bf16_pairs16(const float* src) {
  const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + 16), _mm512_loadu_ps(src));
  return reinterpret_cast<const __m512i&>(h);
}
ROBERTA_BF16_TARGET inline __m512i bf16_pairs16(const uint16_t* src) { return _mm512_loadu_si512(src); }

// 16 values as bf16 in the low halves of 16 dwords, from fp32 (rounded) or bf16 values.
ROBERTA_BF16_TARGET inline __m512i bf16_halves16(const float* src) {
  return _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src)));
}
ROBERTA_BF16_TARGET inline __m512i bf16_halves16(const uint16_t* src) {
  return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
}

// kt (panels, 32 pairs, 64 keys): panel p, pair c, key j = (K[64p + j][2c], K[64p + j][2c + 1]),
// zero past L; K (L, ld) in fp32 (rounded to bf16 here) or already in bf16 (ld even): the same kt.
template <class In>
ROBERTA_BF16_TARGET void pack_keys_bf16(uint32_t* kt, const In* k, size_t ld, size_t L) {
  for (size_t p = 0; p * kKeyPanel < L; ++p) {
    uint32_t* dst = kt + p * kPairs * kKeyPanel;
    for (size_t j0 = 0; j0 < kKeyPanel; j0 += 16) {
      const size_t key0 = p * kKeyPanel + j0;
      for (size_t c0 = 0; c0 < kPairs; c0 += 16) {
        __m512i r[16];  // r[j]: pairs c0 .. c0 + 15 of key key0 + j
        for (size_t j = 0; j < 16; ++j)
          r[j] = key0 + j < L ? bf16_pairs16(k + (key0 + j) * ld + 2 * c0) : _mm512_setzero_si512();
        store_transposed16(dst + c0 * kKeyPanel + j0, kKeyPanel, r);
      }
    }
  }
}

// exp(d) for d <= 0, to the accuracy of probabilities rounded to bf16 (8 significant bits) next:
// 2^f (f = d·log2(e) - n, |f| <= 1/2) by its Taylor polynomial of degree 5, relative error below
// 3e-6, scaled by 2^n (d·log2(e) clamped at -126): 10 instructions against exp_avx512's 15
// (docs/performance.md#figures-behind-the-code). Its results differ from exp_avx512's by a few ulp: a probability can
// round to the next bf16 value, far below the error of rounding the inputs to bf16
// (tests/kernels_test.cpp). NaN gives NaN, as exp_avx512.
__attribute__((target("avx512f"))) inline __m512 exp_for_bf16(__m512 d) {
  const __m512 t = _mm512_max_ps(_mm512_set1_ps(-126.0f), _mm512_mul_ps(d, _mm512_set1_ps(1.44269504088896341f)));
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(1.3333558146e-3f);  // ln(2)^k / k!, k = 5 .. 0
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108665e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650696e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718056e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// p[0, padded / 2) = exp(row[0, n) - max) rounded to bf16 pairs, zero from column n on (padded a
// multiple of 32); returns the sum of the fp32 exponentials (lanes, then double, as
// softmax_exp_avx512). The fp32 values are not written back.
ROBERTA_BF16_TARGET inline double softmax_exp_bf16(const float* row, size_t n, size_t padded, float max, uint32_t* p) {
  const __m512 vmax = _mm512_set1_ps(max);
  __m512 acc = _mm512_setzero_ps();
  for (size_t c = 0; c < padded; c += 32) {
    const __mmask16 m0 = lanes_below(n, c), m1 = lanes_below(n, c + 16);
    const __m512 e0 = _mm512_maskz_mov_ps(m0, exp_for_bf16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m0, row + c), vmax)));
    const __m512 e1 =
        _mm512_maskz_mov_ps(m1, exp_for_bf16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m1, row + c + 16), vmax)));
    acc = _mm512_add_ps(acc, _mm512_add_ps(e0, e1));
    const __m512bh h = _mm512_cvtne2ps_pbh(e1, e0);
    _mm512_store_si512(p + c / 2, reinterpret_cast<const __m512i&>(h));
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc);
  double sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}

// vt (ceil(L / 2), 64): row i, column c = (V[2i][c], V[2i + 1][c]); V[L] reads as 0. V (L, ld)
// in fp32 (rounded to bf16 here) or already in bf16: the same vt.
template <class In>
ROBERTA_BF16_TARGET void pack_values_bf16(uint32_t* vt, const In* v, size_t ld, size_t L) {
  for (size_t i = 0; 2 * i < L; ++i) {
    const In* a = v + 2 * i * ld;
    const In* b = 2 * i + 1 < L ? a + ld : nullptr;
    for (size_t c = 0; c < kHead; c += 16) {
      const __m512i lo = bf16_halves16(a + c);
      const __m512i hi = b ? bf16_halves16(b + c) : _mm512_setzero_si512();
      _mm512_storeu_si512(vt + i * kHead + c, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
  }
}

}  // namespace roberta::kernels::attention_impl
#endif
