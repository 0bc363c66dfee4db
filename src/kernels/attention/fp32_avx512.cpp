// The fp32 attention's AVX-512 register blocks: keys packed in panels of 64 (4 zmm), 6 query rows
// x 64 keys = 24 accumulators for the scores, 6 rows x 64 columns for the context.
#include "kernels/attention/fp32_head.h"

#if defined(__x86_64__)
namespace roberta::kernels::attention_impl {

namespace {

// row[0, n) = exp(row - max) in place; returns the sum, taken in 16 float lanes, then in double
// (exp through vscalefps, the polynomial of vmath::exp).
__attribute__((target("avx512f"))) double softmax_exp_avx512(float* row, size_t n, float max) {
  const __m512 vmax = _mm512_set1_ps(max);
  __m512 acc = _mm512_setzero_ps();
  for (size_t c = 0; c < n; c += 16) {
    const __mmask16 m = lanes_below(n, c);
    const __m512 e = _mm512_maskz_mov_ps(m, exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, row + c), vmax)));
    _mm512_mask_storeu_ps(row + c, m, e);
    acc = _mm512_add_ps(acc, e);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc);
  double sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}

// kt (panels, 64, 64): panel p, row c holds K[64p .. 64p + 63][c], zero past L.
__attribute__((target("avx512f"))) void pack_keys(float* kt, const float* k, size_t ld, size_t L) {
  for (size_t p = 0; p * kKeyPanel < L; ++p) {
    auto* dst = reinterpret_cast<uint32_t*>(kt + p * kHead * kKeyPanel);
    for (size_t j0 = 0; j0 < kKeyPanel; j0 += 16) {
      const size_t key0 = p * kKeyPanel + j0;
      for (size_t c0 = 0; c0 < kHead; c0 += 16) {
        __m512i r[16];
        for (size_t j = 0; j < 16; ++j)
          r[j] = key0 + j < L ? _mm512_castps_si512(_mm512_loadu_ps(k + (key0 + j) * ld + c0)) : _mm512_setzero_si512();
        store_transposed16(dst + c0 * kKeyPanel + j0, kKeyPanel, r);
      }
    }
  }
}

// s (R, padded L) = scale · q (R, 64) Kᵀ, for R <= 6 query rows and L keys (a chunk's: kt at its
// first panel); columns past L come out 0. row_max[r]: the maximum of row r's first L scores.
template <size_t R>
__attribute__((target("avx512f"))) void score_rows(float* s, size_t lds, const float* q, size_t ldq, const float* kt,
                                                   size_t L, float scale, float* row_max) {
  const __m512 vs = _mm512_set1_ps(scale);
  __m512 vmax[R];
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) vmax[r] = _mm512_set1_ps(-INFINITY);
  for (size_t p = 0; p * kKeyPanel < L; ++p) {
    const float* b = kt + p * kHead * kKeyPanel;
    __m512 c0[R], c1[R], c2[R], c3[R];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) c0[r] = c1[r] = c2[r] = c3[r] = _mm512_setzero_ps();
    for (size_t c = 0; c < kHead; ++c) {
      const float* row = b + c * kKeyPanel;
      const __m512 b0 = _mm512_load_ps(row), b1 = _mm512_load_ps(row + 16), b2 = _mm512_load_ps(row + 32),
                   b3 = _mm512_load_ps(row + 48);
#pragma GCC unroll 8
      for (size_t r = 0; r < R; ++r) {
        const __m512 a = _mm512_set1_ps(q[r * ldq + c]);
        c0[r] = _mm512_fmadd_ps(a, b0, c0[r]);
        c1[r] = _mm512_fmadd_ps(a, b1, c1[r]);
        c2[r] = _mm512_fmadd_ps(a, b2, c2[r]);
        c3[r] = _mm512_fmadd_ps(a, b3, c3[r]);
      }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r)
      vmax[r] = store_scores(s + r * lds + p * kKeyPanel, c0[r], c1[r], c2[r], c3[r], vs, vmax[r], p * kKeyPanel, L);
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) row_max[r] = _mm512_reduce_max_ps(vmax[r]);
}

// ctx (R, 64) = inv[r] · (p (R, L) · v (L, 64) + rescale[r] · ctx), for R query rows (store_context).
template <size_t R>
__attribute__((target("avx512f"))) void context_rows(float* ctx, size_t ldc, const float* p, size_t ldp,
                                                     const float* v, size_t ldv, size_t L, const float* inv,
                                                     const float* rescale) {
  __m512 c0[R], c1[R], c2[R], c3[R];
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) c0[r] = c1[r] = c2[r] = c3[r] = _mm512_setzero_ps();
  for (size_t j = 0; j < L; ++j) {
    const float* row = v + j * ldv;
    const __m512 v0 = _mm512_loadu_ps(row), v1 = _mm512_loadu_ps(row + 16), v2 = _mm512_loadu_ps(row + 32),
                 v3 = _mm512_loadu_ps(row + 48);
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(p[r * ldp + j]);
      c0[r] = _mm512_fmadd_ps(a, v0, c0[r]);
      c1[r] = _mm512_fmadd_ps(a, v1, c1[r]);
      c2[r] = _mm512_fmadd_ps(a, v2, c2[r]);
      c3[r] = _mm512_fmadd_ps(a, v3, c3[r]);
    }
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r)
    store_context(ctx + r * ldc, c0[r], c1[r], c2[r], c3[r], inv ? inv + r : nullptr, rescale ? rescale + r : nullptr);
}

}  // namespace

struct Avx512Kernels {
  static constexpr size_t kPanel = kKeyPanel;
  static constexpr auto pack_keys = attention_impl::pack_keys;
  static constexpr auto softmax_exp = softmax_exp_avx512;
  static constexpr Fp32ScoreFn kScore[6] = {score_rows<1>, score_rows<2>, score_rows<3>,
                                        score_rows<4>, score_rows<5>, score_rows<6>};
  static constexpr Fp32ContextFn kContext[6] = {context_rows<1>, context_rows<2>, context_rows<3>,
                                            context_rows<4>, context_rows<5>, context_rows<6>};
};

void attention_head_avx512(float* ctx, size_t ldc, const float* q, const float* k, const float* v, size_t ld, size_t L,
                           float scale) {
  attention_head_fp32<Avx512Kernels>(ctx, ldc, q, k, v, ld, L, scale);
}

}  // namespace roberta::kernels::attention_impl
#endif
