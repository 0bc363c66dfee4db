// The fp32 attention's AVX2 register blocks, for CPUs without AVX-512.
#include "kernels/attention/fp32_head.h"

#if defined(__x86_64__)
namespace roberta::kernels::attention_impl {

namespace {

// The AVX2 kernels of the same scheme (CPUs without AVX-512), in 8-float registers: keys in panels
// of 16 (two ymm; 6 query rows x 16 keys = 12 accumulators), the context in 4 slices of 16 of its
// 64 columns. Faster than the OpenBLAS path at every length measured (docs/performance.md#figures-behind-the-code).
#define ROBERTA_AVX2_TARGET __attribute__((target("avx2,fma")))
constexpr size_t kKeyPanelAvx2 = 16;

// The lanes [c, c + 8) below n, as a mask of all-ones lanes.
ROBERTA_AVX2_TARGET inline __m256i lanes_below_avx2(size_t n, size_t c) {
  const int left = n <= c ? 0 : n - c >= 8 ? 8 : static_cast<int>(n - c);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// As softmax_exp_avx512, in 8 lanes.
ROBERTA_AVX2_TARGET double softmax_exp_avx2(float* row, size_t n, float max) {
  const __m256 vmax = _mm256_set1_ps(max);
  __m256 acc = _mm256_setzero_ps();
  for (size_t c = 0; c < n; c += 8) {
    const __m256i m = lanes_below_avx2(n, c);
    const __m256 e = _mm256_and_ps(_mm256_castsi256_ps(m),
                                   exp_avx2(_mm256_sub_ps(_mm256_maskload_ps(row + c, m), vmax)));
    _mm256_maskstore_ps(row + c, m, e);
    acc = _mm256_add_ps(acc, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  double sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}

// kt (panels, 64, 16): panel p, row c holds K[16p .. 16p + 15][c], zero past L.
ROBERTA_AVX2_TARGET void pack_keys_avx2(float* kt, const float* k, size_t ld, size_t L) {
  for (size_t key0 = 0; key0 < L; key0 += 8) {
    float* panel = kt + (key0 / kKeyPanelAvx2) * kHead * kKeyPanelAvx2 + key0 % kKeyPanelAvx2;
    for (size_t c0 = 0; c0 < kHead; c0 += 8) {
      __m256 r[8];
      for (size_t j = 0; j < 8; ++j)
        r[j] = key0 + j < L ? _mm256_loadu_ps(k + (key0 + j) * ld + c0) : _mm256_setzero_ps();
      transpose8(r);
      for (size_t c = 0; c < 8; ++c) _mm256_storeu_ps(panel + (c0 + c) * kKeyPanelAvx2, r[c]);
    }
  }
  if (L % kKeyPanelAvx2 && L % kKeyPanelAvx2 <= 8) {  // the last panel's second half: zero
    float* panel = kt + (L / kKeyPanelAvx2) * kHead * kKeyPanelAvx2;
    for (size_t c = 0; c < kHead; ++c) _mm256_storeu_ps(panel + c * kKeyPanelAvx2 + 8, _mm256_setzero_ps());
  }
}

// As score_rows, for R <= 6 query rows in panels of 16 keys.
template <size_t R>
ROBERTA_AVX2_TARGET void score_rows_avx2(float* s, size_t lds, const float* q, size_t ldq, const float* kt, size_t L,
                                         float scale, float* row_max) {
  const __m256 vs = _mm256_set1_ps(scale), lowest = _mm256_set1_ps(-INFINITY);
  __m256 vmax[R];
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) vmax[r] = lowest;
  for (size_t p0 = 0; p0 < L; p0 += kKeyPanelAvx2) {
    const float* b = kt + p0 * kHead;
    __m256 c0[R], c1[R];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) c0[r] = c1[r] = _mm256_setzero_ps();
    for (size_t c = 0; c < kHead; ++c) {
      const __m256 b0 = _mm256_load_ps(b + c * kKeyPanelAvx2), b1 = _mm256_load_ps(b + c * kKeyPanelAvx2 + 8);
#pragma GCC unroll 8
      for (size_t r = 0; r < R; ++r) {
        const __m256 a = _mm256_broadcast_ss(q + r * ldq + c);
        c0[r] = _mm256_fmadd_ps(a, b0, c0[r]);
        c1[r] = _mm256_fmadd_ps(a, b1, c1[r]);
      }
    }
    const bool whole = p0 + kKeyPanelAvx2 <= L;
    const __m256 in0 = _mm256_castsi256_ps(lanes_below_avx2(L, p0)),
                 in1 = _mm256_castsi256_ps(lanes_below_avx2(L, p0 + 8));
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
      const __m256 s0 = _mm256_mul_ps(c0[r], vs), s1 = _mm256_mul_ps(c1[r], vs);
      _mm256_store_ps(s + r * lds + p0, s0);
      _mm256_store_ps(s + r * lds + p0 + 8, s1);
      vmax[r] = whole ? _mm256_max_ps(vmax[r], _mm256_max_ps(s0, s1))
                      : _mm256_max_ps(vmax[r], _mm256_max_ps(_mm256_blendv_ps(lowest, s0, in0),
                                                             _mm256_blendv_ps(lowest, s1, in1)));
    }
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) {
    __m256 m = _mm256_max_ps(vmax[r], _mm256_permute2f128_ps(vmax[r], vmax[r], 1));
    m = _mm256_max_ps(m, _mm256_shuffle_ps(m, m, 0x4E));
    m = _mm256_max_ps(m, _mm256_shuffle_ps(m, m, 0xB1));
    row_max[r] = _mm256_cvtss_f32(m);
  }
}

// As context_rows, for R <= 6 query rows, 16 of the 64 columns at a time.
template <size_t R>
ROBERTA_AVX2_TARGET void context_rows_avx2(float* ctx, size_t ldc, const float* p, size_t ldp, const float* v,
                                           size_t ldv, size_t L, const float* inv, const float* rescale) {
  for (size_t c0 = 0; c0 < kHead; c0 += 16) {
    __m256 a0[R], a1[R];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
    for (size_t j = 0; j < L; ++j) {
      const __m256 v0 = _mm256_loadu_ps(v + j * ldv + c0), v1 = _mm256_loadu_ps(v + j * ldv + c0 + 8);
#pragma GCC unroll 8
      for (size_t r = 0; r < R; ++r) {
        const __m256 w = _mm256_broadcast_ss(p + r * ldp + j);
        a0[r] = _mm256_fmadd_ps(w, v0, a0[r]);
        a1[r] = _mm256_fmadd_ps(w, v1, a1[r]);
      }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {  // (store_context's arithmetic)
      float* out = ctx + r * ldc + c0;
      if (rescale) {
        const __m256 f = _mm256_set1_ps(rescale[r]);
        a0[r] = _mm256_fmadd_ps(f, _mm256_loadu_ps(out), a0[r]);
        a1[r] = _mm256_fmadd_ps(f, _mm256_loadu_ps(out + 8), a1[r]);
      }
      if (inv) {
        const __m256 f = _mm256_set1_ps(inv[r]);
        a0[r] = _mm256_mul_ps(a0[r], f), a1[r] = _mm256_mul_ps(a1[r], f);
      }
      _mm256_storeu_ps(out, a0[r]);
      _mm256_storeu_ps(out + 8, a1[r]);
    }
  }
}

}  // namespace

struct Avx2Kernels {
  static constexpr size_t kPanel = kKeyPanelAvx2;
  static constexpr auto pack_keys = pack_keys_avx2;
  static constexpr auto softmax_exp = softmax_exp_avx2;
  static constexpr Fp32ScoreFn kScore[6] = {score_rows_avx2<1>, score_rows_avx2<2>, score_rows_avx2<3>,
                                        score_rows_avx2<4>, score_rows_avx2<5>, score_rows_avx2<6>};
  static constexpr Fp32ContextFn kContext[6] = {context_rows_avx2<1>, context_rows_avx2<2>, context_rows_avx2<3>,
                                            context_rows_avx2<4>, context_rows_avx2<5>, context_rows_avx2<6>};
};

void attention_head_avx2(float* ctx, size_t ldc, const float* q, const float* k, const float* v, size_t ld, size_t L,
                         float scale) {
  attention_head_fp32<Avx2Kernels>(ctx, ldc, q, k, v, ld, L, scale);
}

}  // namespace roberta::kernels::attention_impl
#endif
