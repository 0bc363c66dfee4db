// The bf16 attention in AVX512-BF16 register blocks (vdpbf16ps): the fp32 kernels' scheme with
// Q, K, V and the probabilities rounded to bf16, sums in fp32.
#include <vector>

#include "kernels/attention/bf16_pack.h"
#include "util/scratch.h"

#if defined(__x86_64__)
namespace roberta::kernels::attention_impl {

namespace {

// s (R, padded L) = scale · q (R <= 6 rows of 32 pairs) Kᵀ; row_max as score_rows.
template <size_t R>
ROBERTA_BF16_TARGET void score_rows_bf16(float* s, size_t lds, const uint32_t* q, const uint32_t* kt, size_t L,
                                         float scale, float* row_max) {
  const __m512 vs = _mm512_set1_ps(scale);
  __m512 vmax[R];
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) vmax[r] = _mm512_set1_ps(-INFINITY);
  for (size_t p = 0; p * kKeyPanel < L; ++p) {
    const uint32_t* b = kt + p * kPairs * kKeyPanel;
    __m512 c0[R], c1[R], c2[R], c3[R];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) c0[r] = c1[r] = c2[r] = c3[r] = _mm512_setzero_ps();
    for (size_t c = 0; c < kPairs; ++c) {
      const uint32_t* row = b + c * kKeyPanel;
      const __m512i b0 = _mm512_load_si512(row), b1 = _mm512_load_si512(row + 16), b2 = _mm512_load_si512(row + 32),
                    b3 = _mm512_load_si512(row + 48);
#pragma GCC unroll 8
      for (size_t r = 0; r < R; ++r) {
        const __m512i a = _mm512_set1_epi32(static_cast<int>(q[r * kPairs + c]));
        const __m512bh ab = reinterpret_cast<const __m512bh&>(a);
        c0[r] = _mm512_dpbf16_ps(c0[r], ab, reinterpret_cast<const __m512bh&>(b0));
        c1[r] = _mm512_dpbf16_ps(c1[r], ab, reinterpret_cast<const __m512bh&>(b1));
        c2[r] = _mm512_dpbf16_ps(c2[r], ab, reinterpret_cast<const __m512bh&>(b2));
        c3[r] = _mm512_dpbf16_ps(c3[r], ab, reinterpret_cast<const __m512bh&>(b3));
      }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r)
      vmax[r] = store_scores(s + r * lds + p * kKeyPanel, c0[r], c1[r], c2[r], c3[r], vs, vmax[r], p * kKeyPanel, L);
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) row_max[r] = _mm512_reduce_max_ps(vmax[r]);
}

// ctx (R, 64) = inv[r] · (p (R rows of `pairs` pairs, row stride ldp) · V (packed by
// pack_values_bf16) + rescale[r] · ctx) (store_context).
template <size_t R>
ROBERTA_BF16_TARGET void context_rows_bf16(float* ctx, size_t ldc, const uint32_t* p, size_t ldp, const uint32_t* vt,
                                           size_t pairs, const float* inv, const float* rescale) {
  __m512 c0[R], c1[R], c2[R], c3[R];
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) c0[r] = c1[r] = c2[r] = c3[r] = _mm512_setzero_ps();
  for (size_t i = 0; i < pairs; ++i) {
    const uint32_t* row = vt + i * kHead;
    const __m512i v0 = _mm512_load_si512(row), v1 = _mm512_load_si512(row + 16), v2 = _mm512_load_si512(row + 32),
                  v3 = _mm512_load_si512(row + 48);
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
      const __m512i a = _mm512_set1_epi32(static_cast<int>(p[r * ldp + i]));
      const __m512bh ab = reinterpret_cast<const __m512bh&>(a);
      c0[r] = _mm512_dpbf16_ps(c0[r], ab, reinterpret_cast<const __m512bh&>(v0));
      c1[r] = _mm512_dpbf16_ps(c1[r], ab, reinterpret_cast<const __m512bh&>(v1));
      c2[r] = _mm512_dpbf16_ps(c2[r], ab, reinterpret_cast<const __m512bh&>(v2));
      c3[r] = _mm512_dpbf16_ps(c3[r], ab, reinterpret_cast<const __m512bh&>(v3));
    }
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r)
    store_context(ctx + r * ldc, c0[r], c1[r], c2[r], c3[r], inv ? inv + r : nullptr, rescale ? rescale + r : nullptr);
}

}  // namespace

void attention_head_bf16(float* ctx, size_t ldc, const float* q, const float* k, const float* v, size_t ld, size_t L,
                         float scale) {
  using ScoreFn = void (*)(float*, size_t, const uint32_t*, const uint32_t*, size_t, float, float*);
  using ContextFn =
      void (*)(float*, size_t, const uint32_t*, size_t, const uint32_t*, size_t, const float*, const float*);
  static constexpr ScoreFn kScore[6] = {score_rows_bf16<1>, score_rows_bf16<2>, score_rows_bf16<3>,
                                        score_rows_bf16<4>, score_rows_bf16<5>, score_rows_bf16<6>};
  static constexpr ContextFn kContext[6] = {context_rows_bf16<1>, context_rows_bf16<2>, context_rows_bf16<3>,
                                            context_rows_bf16<4>, context_rows_bf16<5>, context_rows_bf16<6>};
  // (keys in chunks of kKeyChunk with a running softmax, as attention_head_fp32)
  const size_t panels = (L + kKeyPanel - 1) / kKeyPanel, lds = std::min(panels * kKeyPanel, kKeyChunk),
               pairs = (L + 1) / 2;
  thread_local std::vector<uint32_t> q_buffer, kt_buffer, vt_buffer, p_buffer;
  thread_local std::vector<float> s_buffer;
  const util::Scratch<uint32_t> q_scratch(q_buffer, kQueryBlock * kPairs);  // (each 64-byte aligned)
  const util::Scratch<uint32_t> kt_scratch(kt_buffer, panels * kPairs * kKeyPanel);
  const util::Scratch<uint32_t> vt_scratch(vt_buffer, pairs * kHead);
  const util::Scratch<uint32_t> p_scratch(p_buffer, kQueryBlock * lds / 2);
  const util::Scratch<float> s_scratch(s_buffer, kQueryBlock * lds);
  uint32_t *q2 = q_scratch.data(), *kt = kt_scratch.data(), *vt = vt_scratch.data(), *p2 = p_scratch.data();
  float* s = s_scratch.data();
  pack_keys_bf16(kt, k, ld, L);
  pack_values_bf16(vt, v, ld, L);
  float row_max[kQueryBlock], inv[kQueryBlock], rescale[kQueryBlock];
  RunningSoftmax softmax[kQueryBlock];
  for (size_t i0 = 0; i0 < L; i0 += kQueryBlock) {
    const size_t rows = std::min(kQueryBlock, L - i0);
    for (size_t r = 0; r < rows; ++r) to_bf16_pairs(q2 + r * kPairs, q + (i0 + r) * ld, kHead);
    for (size_t k0 = 0; k0 < L; k0 += kKeyChunk) {
      const size_t n = std::min(kKeyChunk, L - k0);
      const bool first = k0 == 0, last = k0 + n == L;
      for (size_t r = 0; r < rows; r += 6)
        kScore[std::min<size_t>(6, rows - r) - 1](s + r * lds, lds, q2 + r * kPairs, kt + k0 * kPairs, n, scale,
                                                  row_max + r);
      for (size_t r = 0; r < rows; ++r) {  // zero past n: the odd key's partner and the padding
        const float max = softmax[r].next(row_max[r], first, rescale[r]);
        inv[r] = softmax[r].add(softmax_exp_bf16(s + r * lds, n, lds, max, p2 + r * lds / 2), first, rescale[r]);
      }
      for (size_t r = 0; r < rows; r += 6)
        kContext[std::min<size_t>(6, rows - r) - 1](ctx + (i0 + r) * ldc, ldc, p2 + r * lds / 2, lds / 2,
                                                    vt + k0 / 2 * kHead, std::min(pairs - k0 / 2, lds / 2),
                                                    last ? inv + r : nullptr, first ? nullptr : rescale + r);
    }
  }
}

}  // namespace roberta::kernels::attention_impl
#endif
