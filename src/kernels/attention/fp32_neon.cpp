// The fp32 attention's NEON register blocks, for 64-bit ARM (the scheme of fp32_head.h).
#include "kernels/attention/fp32_head.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cmath>

#include "kernels/neon_math.h"

namespace roberta::kernels::attention_impl {

namespace {

// Keys in panels of 16 (four 4-float vectors; 6 query rows x 16 keys = 24 accumulators, with the
// panel's 4 vectors in the 32 registers), the context in 4 slices of 16 of its 64 columns: the
// AVX2 kernels' shapes in 4-float vectors.
constexpr size_t kKeyPanelNeon = 16;

// row[c] = exp(row[c] - max) for c < n; returns their sum (four lanes, then in double, as
// softmax_exp_avx2 sums). The last n % 4 through a vector padded with -inf (whose exp is 0).
double softmax_exp_neon(float* row, size_t n, float max) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  size_t c = 0;
  for (; c + 4 <= n; c += 4) {
    const float32x4_t e = exp_neon(vsubq_f32(vld1q_f32(row + c), vdupq_n_f32(max)));
    vst1q_f32(row + c, e);
    acc = vaddq_f32(acc, e);
  }
  if (c < n) {
    float tail[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    for (size_t i = c; i < n; ++i) tail[i - c] = row[i];
    const float32x4_t e = exp_neon(vsubq_f32(vld1q_f32(tail), vdupq_n_f32(max)));
    vst1q_f32(tail, e);
    for (size_t i = c; i < n; ++i) row[i] = tail[i - c];
    acc = vaddq_f32(acc, e);
  }
  float lanes[4];
  vst1q_f32(lanes, acc);
  double sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}

// kt (panels, 64, 16): panel p, row c holds K[16p .. 16p + 15][c], zero past L.
void pack_keys_neon(float* kt, const float* k, size_t ld, size_t L) {
  const size_t panels = (L + kKeyPanelNeon - 1) / kKeyPanelNeon;
  for (size_t p = 0; p < panels; ++p) {
    float* panel = kt + p * kHead * kKeyPanelNeon;
    for (size_t j = 0; j < kKeyPanelNeon; ++j) {
      const size_t key = p * kKeyPanelNeon + j;
      for (size_t c = 0; c < kHead; ++c) panel[c * kKeyPanelNeon + j] = key < L ? k[key * ld + c] : 0.0f;
    }
  }
}

// s[r][0, L) = scale · q_r · kt's keys, row_max[r] = their maximum, for R <= 6 query rows; whole
// panels are stored (s holds them), only the keys below L count for the maximum.
//   s: (R, lds), q: (R, ldq) of 64, kt: (panels, 64, 16).
template <size_t R>
void score_rows_neon(float* s, size_t lds, const float* q, size_t ldq, const float* kt, size_t L, float scale,
                     float* row_max) {
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) row_max[r] = -INFINITY;
  for (size_t p0 = 0; p0 < L; p0 += kKeyPanelNeon) {
    const float* b = kt + p0 * kHead;
    float32x4_t c[R][4];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (size_t v = 0; v < 4; ++v) c[r][v] = vdupq_n_f32(0.0f);
    for (size_t d = 0; d < kHead; ++d) {
      const float* bd = b + d * kKeyPanelNeon;
      const float32x4_t b0 = vld1q_f32(bd), b1 = vld1q_f32(bd + 4), b2 = vld1q_f32(bd + 8), b3 = vld1q_f32(bd + 12);
#pragma GCC unroll 8
      for (size_t r = 0; r < R; ++r) {
        const float a = q[r * ldq + d];
        c[r][0] = vfmaq_n_f32(c[r][0], b0, a);
        c[r][1] = vfmaq_n_f32(c[r][1], b1, a);
        c[r][2] = vfmaq_n_f32(c[r][2], b2, a);
        c[r][3] = vfmaq_n_f32(c[r][3], b3, a);
      }
    }
    const size_t valid = std::min(kKeyPanelNeon, L - p0);
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
      float* out = s + r * lds + p0;
#pragma GCC unroll 4
      for (size_t v = 0; v < 4; ++v) vst1q_f32(out + 4 * v, vmulq_n_f32(c[r][v], scale));
      if (valid == kKeyPanelNeon) {
        const float32x4_t m = vmaxq_f32(vmaxq_f32(vld1q_f32(out), vld1q_f32(out + 4)),
                                        vmaxq_f32(vld1q_f32(out + 8), vld1q_f32(out + 12)));
        row_max[r] = std::max(row_max[r], vmaxvq_f32(m));
      } else {
        for (size_t j = 0; j < valid; ++j) row_max[r] = std::max(row_max[r], out[j]);
      }
    }
  }
}

// ctx rows (64 columns) = inv[r] · (p_r · V + rescale[r] · ctx): without rescale (null) ctx's
// earlier values do not count, without inv (null) the sums are not scaled (store_context's
// arithmetic), for R <= 6 query rows, 16 of the 64 columns at a time.
//   ctx: (R, ldc), p: (R, ldp) of L, v: (L, ldv) of 64.
template <size_t R>
void context_rows_neon(float* ctx, size_t ldc, const float* p, size_t ldp, const float* v, size_t ldv, size_t L,
                       const float* inv, const float* rescale) {
  for (size_t c0 = 0; c0 < kHead; c0 += 16) {
    float32x4_t a[R][4];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (size_t u = 0; u < 4; ++u) a[r][u] = vdupq_n_f32(0.0f);
    for (size_t j = 0; j < L; ++j) {
      const float* vj = v + j * ldv + c0;
      const float32x4_t v0 = vld1q_f32(vj), v1 = vld1q_f32(vj + 4), v2 = vld1q_f32(vj + 8), v3 = vld1q_f32(vj + 12);
#pragma GCC unroll 8
      for (size_t r = 0; r < R; ++r) {
        const float w = p[r * ldp + j];
        a[r][0] = vfmaq_n_f32(a[r][0], v0, w);
        a[r][1] = vfmaq_n_f32(a[r][1], v1, w);
        a[r][2] = vfmaq_n_f32(a[r][2], v2, w);
        a[r][3] = vfmaq_n_f32(a[r][3], v3, w);
      }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
      float* out = ctx + r * ldc + c0;
#pragma GCC unroll 4
      for (size_t u = 0; u < 4; ++u) {
        float32x4_t x = a[r][u];
        if (rescale) x = vfmaq_n_f32(x, vld1q_f32(out + 4 * u), rescale[r]);
        if (inv) x = vmulq_n_f32(x, inv[r]);
        vst1q_f32(out + 4 * u, x);
      }
    }
  }
}

}  // namespace

struct NeonKernels {
  static constexpr size_t kPanel = kKeyPanelNeon;
  static constexpr auto pack_keys = pack_keys_neon;
  static constexpr auto softmax_exp = softmax_exp_neon;
  static constexpr Fp32ScoreFn kScore[6] = {score_rows_neon<1>, score_rows_neon<2>, score_rows_neon<3>,
                                            score_rows_neon<4>, score_rows_neon<5>, score_rows_neon<6>};
  static constexpr Fp32ContextFn kContext[6] = {context_rows_neon<1>, context_rows_neon<2>, context_rows_neon<3>,
                                                context_rows_neon<4>, context_rows_neon<5>, context_rows_neon<6>};
};

void attention_head_neon(float* ctx, size_t ldc, const float* q, const float* k, const float* v, size_t ld, size_t L,
                         float scale) {
  attention_head_fp32<NeonKernels>(ctx, ldc, q, k, v, ld, L, scale);
}

}  // namespace roberta::kernels::attention_impl
#endif
