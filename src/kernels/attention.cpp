#include "attention.h"

#include "intrinsics.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "amx_tiles.h"
#include "avx2_math.h"
#include "avx512_math.h"
#include "isa.h"

#include "runtime/plan.h"
#include "roberta/error.h"
#include "util/scratch.h"
#include "util/thread_pool.h"
#include "vector_math.h"

namespace roberta::kernels {

namespace {
// row (n) = softmax(row), with 8 partial maxima and sums so the loops vectorise.
ROBERTA_VECTOR_CLONES void softmax_row(float* __restrict row, size_t n) {
  float lane_max[8];
  for (int k = 0; k < 8; ++k) lane_max[k] = row[0];
  size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) lane_max[k] = row[j + k] > lane_max[k] ? row[j + k] : lane_max[k];
  float max = lane_max[0];
  for (int k = 1; k < 8; ++k) max = lane_max[k] > max ? lane_max[k] : max;
  for (; j < n; ++j) max = row[j] > max ? row[j] : max;
  for (j = 0; j < n; ++j) row[j] = vmath::exp(row[j] - max);
  double lane_sum[8] = {};
  j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) lane_sum[k] += row[j + k];
  double sum = 0;
  for (; j < n; ++j) sum += row[j];
  for (int k = 0; k < 8; ++k) sum += lane_sum[k];
  const float inv = static_cast<float>(1.0 / sum);
  for (j = 0; j < n; ++j) row[j] *= inv;
}

#if defined(__x86_64__)
// Fast path for one (sequence, head) with head size 64 (every RoBERTa size): AVX-512 (or AVX2:
// Avx2Kernels) register blocks instead of three OpenBLAS calls (which repack their operands on
// every call and ran W3's attention at about half the FMA rate). Query rows go in blocks of
// kQueryBlock: their scores (kQueryBlock, L), or of a chunk of kKeyChunk keys at a time, are
// computed, softmaxed and multiplied by V while they are in cache, so the full (L, L) score matrix
// never exists.
constexpr size_t kHead = 64;
constexpr size_t kKeyPanel = 64;    // keys per panel of the packed Kᵀ (4 zmm: one broadcast feeds 4 products)
constexpr size_t kQueryBlock = 48;  // query rows whose scores are live at once (a multiple of 6)
// Keys whose scores are live at once (a multiple of kKeyPanel). A longer sequence's keys go in
// chunks of this many with FlashAttention's running softmax: each chunk's exponentials are taken
// from the maximum of the row's scores so far, and the context of the chunks before is scaled by
// exp(old maximum - new) when the maximum grows. The scores of a block of query rows then stay in
// L2 whatever the length: at 8192 keys those of all keys took 1.5 MB a block in fp32, and the
// attention ran at 40% of its rate at 512 keys (roberta-kernel-bench, 12 heads, Xeon with AMX, fp32:
// 2048 keys 120-132 -> 196-224 GFLOP/s, 8192 keys 87-94 -> 190-203; chunks of 256 / 512 / 1024 at
// 8192 keys: 194 / 203 / 189). Up to this many keys there is one chunk and the results are those
// of a softmax over the whole row at once. (The AMX kernel's chunks: kAmxKeyChunk.)
constexpr size_t kKeyChunk = 512;

// The running softmax of one query row over the chunks of its keys.
struct RunningSoftmax {
  float max = 0;
  double sum = 0;
  // Takes a chunk whose scores' maximum is chunk_max: returns the maximum to take its exponentials
  // from, and sets `rescale` to the factor for the context of the chunks before (1 for the first).
  float next(float chunk_max, bool first, float& rescale) {
    rescale = first ? 1.0f : std::exp(max - std::max(max, chunk_max));
    max = first ? chunk_max : std::max(max, chunk_max);
    return max;
  }
  // Adds the chunk's sum of exponentials (rescale as next() set it); returns 1 / the sum so far.
  float add(double chunk_sum, bool first, float rescale) {
    sum = first ? chunk_sum : sum * rescale + chunk_sum;
    return static_cast<float>(1.0 / sum);
  }
};

// Softmax is split over the kernels around it, so the scores are read once: the score kernels
// also return each row's maximum, softmax_exp_* writes exp(score - max) (unnormalised), and the
// context kernels scale their output row by 1 / the row's sum (FlashAttention's order; with one
// chunk of keys the same quantities as softmax_row's, divided at the end instead of before the
// product with V; with several, max and sum are the running ones and 1 / sum comes at the last).

// Mask of the lanes [c, c + 16) below n.
inline __mmask16 lanes_below(size_t n, size_t c) {
  return n <= c ? 0 : n - c >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - c)) - 1);
}

// out[0, 64) = scale · a row's 64 sums c0..c3 of one key panel (columns p0 .. p0 + 63); returns
// vmax with those scores folded in (only the columns below n count).
__attribute__((target("avx512f"), always_inline)) inline __m512 store_scores(float* out, __m512 c0, __m512 c1,
                                                                           __m512 c2, __m512 c3, __m512 scale,
                                                                           __m512 vmax, size_t p0, size_t n) {
  c0 = _mm512_mul_ps(c0, scale), c1 = _mm512_mul_ps(c1, scale), c2 = _mm512_mul_ps(c2, scale);
  c3 = _mm512_mul_ps(c3, scale);
  _mm512_store_ps(out, c0);
  _mm512_store_ps(out + 16, c1);
  _mm512_store_ps(out + 32, c2);
  _mm512_store_ps(out + 48, c3);
  if (p0 + 64 <= n) return _mm512_max_ps(vmax, _mm512_max_ps(_mm512_max_ps(c0, c1), _mm512_max_ps(c2, c3)));
  vmax = _mm512_mask_max_ps(vmax, lanes_below(n, p0), vmax, c0);
  vmax = _mm512_mask_max_ps(vmax, lanes_below(n, p0 + 16), vmax, c1);
  vmax = _mm512_mask_max_ps(vmax, lanes_below(n, p0 + 32), vmax, c2);
  return _mm512_mask_max_ps(vmax, lanes_below(n, p0 + 48), vmax, c3);
}

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

// The 16 x 16 block of 32-bit elements in r, transposed in registers (r[i] becomes column i).
__attribute__((target("avx512f"), always_inline)) inline void transpose16(__m512i (&r)[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int h = 0; h < 16; h += 8)
    for (int j = 0; j < 4; ++j) {
      t[h + j] = _mm512_shuffle_i32x4(r[h + j], r[h + j + 4], 0x88);
      t[h + j + 4] = _mm512_shuffle_i32x4(r[h + j], r[h + j + 4], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0xdd);
  }
}

// dst[i * ld_dst + j] = r[j]'s element i: the 16 x 16 block transposed, one row of it per store.
__attribute__((target("avx512f"), always_inline)) inline void store_transposed16(uint32_t* dst, size_t ld_dst,
                                                                                __m512i (&r)[16]) {
  transpose16(r);
  for (size_t i = 0; i < 16; ++i) _mm512_store_si512(dst + i * ld_dst, r[i]);
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

// ctx row r (64 values) = inv[r] · (sums c0..c3 + rescale[r] · what it holds): without rescale
// (null) its earlier values do not count, without inv (null) the sums are not scaled.
__attribute__((target("avx512f"), always_inline)) inline void store_context(float* ctx, __m512 c0, __m512 c1,
                                                                            __m512 c2, __m512 c3, const float* inv,
                                                                            const float* rescale) {
  if (rescale) {
    const __m512 a = _mm512_set1_ps(*rescale);
    c0 = _mm512_fmadd_ps(a, _mm512_loadu_ps(ctx), c0), c1 = _mm512_fmadd_ps(a, _mm512_loadu_ps(ctx + 16), c1);
    c2 = _mm512_fmadd_ps(a, _mm512_loadu_ps(ctx + 32), c2), c3 = _mm512_fmadd_ps(a, _mm512_loadu_ps(ctx + 48), c3);
  }
  if (inv) {
    const __m512 f = _mm512_set1_ps(*inv);
    c0 = _mm512_mul_ps(c0, f), c1 = _mm512_mul_ps(c1, f), c2 = _mm512_mul_ps(c2, f), c3 = _mm512_mul_ps(c3, f);
  }
  _mm512_storeu_ps(ctx, c0);
  _mm512_storeu_ps(ctx + 16, c1);
  _mm512_storeu_ps(ctx + 32, c2);
  _mm512_storeu_ps(ctx + 48, c3);
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

// The AVX2 kernels of the same scheme (CPUs without AVX-512: AMD's Zen 2 and 3, Intel's client
// CPUs and older servers), in 8-float registers: keys in panels of 16 (two ymm; 6 query rows x 16
// keys = 12 accumulators), the context in 4 slices of 16 of its 64 columns. (On the Xeon held to
// AVX2, roberta-kernel-bench, 12 heads: 167-168 GFLOP/s at 128 keys and 173-176 at 2048, where
// the OpenBLAS path on its Haswell kernels ran 127-128 and 141-142.)
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

// The fp32 kernels of one instruction set, for attention_head_fp32.
using Fp32ScoreFn = void (*)(float*, size_t, const float*, size_t, const float*, size_t, float, float*);
using Fp32ContextFn = void (*)(float*, size_t, const float*, size_t, const float*, size_t, size_t, const float*,
                               const float*);
struct Avx512Kernels {
  static constexpr size_t kPanel = kKeyPanel;
  static constexpr auto pack_keys = kernels::pack_keys;
  static constexpr auto softmax_exp = softmax_exp_avx512;
  static constexpr Fp32ScoreFn kScore[6] = {score_rows<1>, score_rows<2>, score_rows<3>,
                                        score_rows<4>, score_rows<5>, score_rows<6>};
  static constexpr Fp32ContextFn kContext[6] = {context_rows<1>, context_rows<2>, context_rows<3>,
                                            context_rows<4>, context_rows<5>, context_rows<6>};
};
struct Avx2Kernels {
  static constexpr size_t kPanel = kKeyPanelAvx2;
  static constexpr auto pack_keys = pack_keys_avx2;
  static constexpr auto softmax_exp = softmax_exp_avx2;
  static constexpr Fp32ScoreFn kScore[6] = {score_rows_avx2<1>, score_rows_avx2<2>, score_rows_avx2<3>,
                                        score_rows_avx2<4>, score_rows_avx2<5>, score_rows_avx2<6>};
  static constexpr Fp32ContextFn kContext[6] = {context_rows_avx2<1>, context_rows_avx2<2>, context_rows_avx2<3>,
                                            context_rows_avx2<4>, context_rows_avx2<5>, context_rows_avx2<6>};
};

// ctx (L, 64) with row stride ldc = softmax(scale · Q Kᵀ) V for one (sequence, head); q, k, v
// have row stride ld. Kernels: Avx512Kernels or Avx2Kernels.
template <class Kernels>
void attention_head_fp32(float* ctx, size_t ldc, const float* q, const float* k, const float* v, size_t ld, size_t L,
                         float scale) {
  constexpr size_t P = Kernels::kPanel;
  static_assert(kKeyChunk % P == 0, "chunks of whole panels: a chunk's Kᵀ starts at kt + k0 · kHead");
  const size_t panels = (L + P - 1) / P, lds = std::min(panels * P, kKeyChunk);
  thread_local std::vector<float> kt_buffer, s_buffer;
  // (util::Scratch is 64-byte aligned: aligned loads and stores of whole panels)
  const util::Scratch<float> kt_scratch(kt_buffer, panels * kHead * P);
  const util::Scratch<float> s_scratch(s_buffer, kQueryBlock * lds);
  float *kt = kt_scratch.data(), *s = s_scratch.data();
  Kernels::pack_keys(kt, k, ld, L);
  // V's rows copied next to each other when more than one block of query rows reads them: rows
  // of the (T, 3H) QKV matrix lie 9 KB apart (roberta-base), so a block's pass over V touched a
  // page per row, and past ~2048 keys more pages than the TLB holds (roberta-kernel-bench, 12
  // heads, Xeon with AMX: 512 keys 251-268 -> 304-306 GFLOP/s, 2048 198-212 -> 303-316).
  thread_local std::vector<float> v_buffer;
  const bool pack_v = L > kQueryBlock;
  const util::Scratch<float> v_scratch(v_buffer, pack_v ? L * kHead : 0);
  size_t ldv = ld;
  if (pack_v) {
    float* packed = v_scratch.data();
    for (size_t j = 0; j < L; ++j) std::memcpy(packed + j * kHead, v + j * ld, kHead * sizeof(float));
    v = packed, ldv = kHead;
  }
  float row_max[kQueryBlock], inv[kQueryBlock], rescale[kQueryBlock];
  RunningSoftmax softmax[kQueryBlock];
  for (size_t i0 = 0; i0 < L; i0 += kQueryBlock) {
    const size_t rows = std::min(kQueryBlock, L - i0);
    for (size_t k0 = 0; k0 < L; k0 += kKeyChunk) {  // (ctx holds the chunks' context so far)
      const size_t n = std::min(kKeyChunk, L - k0);
      const bool first = k0 == 0, last = k0 + n == L;
      for (size_t r = 0; r < rows; r += 6)
        Kernels::kScore[std::min<size_t>(6, rows - r) - 1](s + r * lds, lds, q + (i0 + r) * ld, ld, kt + k0 * kHead,
                                                           n, scale, row_max + r);
      for (size_t r = 0; r < rows; ++r) {
        const float max = softmax[r].next(row_max[r], first, rescale[r]);
        inv[r] = softmax[r].add(Kernels::softmax_exp(s + r * lds, n, max), first, rescale[r]);
      }
      for (size_t r = 0; r < rows; r += 6)
        Kernels::kContext[std::min<size_t>(6, rows - r) - 1](ctx + (i0 + r) * ldc, ldc, s + r * lds, lds,
                                                             v + k0 * ldv, ldv, n, last ? inv + r : nullptr,
                                                             first ? nullptr : rescale + r);
    }
  }
}

// The same with bfloat16 inputs and fp32 sums (AVX512-BF16's vdpbf16ps, twice the products per
// instruction of an fp32 FMA): Q, K, V and the unnormalised probabilities exp(score - max) are
// rounded to bf16 (nearest even); scores, softmax's sums and the context are fp32. Used by the
// bf16 and int8 encoders, whose matrix inputs are rounded at least as coarsely. Pairs of bf16
// travel as one uint32 (low half first), the operand layout of vdpbf16ps.
constexpr size_t kPairs = kHead / 2;  // bf16 pairs per row of Q, K or V

#define ROBERTA_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

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
// 3e-6, scaled by 2^n (d·log2(e) clamped at -126). 10 instructions against exp_avx512's 15: the
// AMX attention of 12 heads x 128 tokens 150 -> 132 us (roberta-kernel-bench); int8 and bf16
// 8 x 128 and 32 x 8..128 tokens 0.5-1.5% faster (paired medians of 5 rounds; Xeon with AMX; the
// AVX512-BF16 attention of the Zen 4 uses it too, not measured there yet). Its results differ
// from exp_avx512's by a few ulp: a probability can round to the next bf16 value (the AMX
// attention's largest difference from float64 of its rounded inputs went from 7e-6 to 6e-5,
// against 7.5e-3 from its unrounded inputs; tests/kernels_test.cpp). NaN gives NaN, as exp_avx512.
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
ROBERTA_BF16_TARGET double softmax_exp_bf16(const float* row, size_t n, size_t padded, float max, uint32_t* p) {
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
// The bf16 attention on AMX tiles (amx_tiles.h), 16 query rows at a time, with the same packing
// and softmax: a key panel's pair rows (pack_keys_bf16) are the score product's B tiles as they
// are, and the key-pair rows of V (pack_values_bf16) the context product's. Scores: tmm0-3 = 16
// query rows x the panel's 64 keys, A = the rows' 32 pairs of Q in tmm4-5, B tiles in tmm6-7.
// Context: tmm0-3 = 16 rows x the 64 columns of the head, A = 16 key pairs of P in tmm4, B in tmm5-7.
// Tested through EmulatedTiles everywhere and on the tiles where the CPU has AMX
// (tests/kernels_test.cpp).
constexpr size_t kAmxQueryRows = 16;

// tmm0-3 (+)= the A tile tmm<A> (16 pairs of Q) times the B tiles of 16 key pairs x the panel's 64
// keys at b (row stride b_stride bytes), 16 keys a tile.
template <class Tiles, int A>
void amx_score_step(const uint32_t* b, size_t b_stride) {
  Tiles::template load<6>(b, b_stride);
  Tiles::template load<7>(b + 16, b_stride);
  Tiles::template dp_bf16<0, A, 6>();
  Tiles::template dp_bf16<1, A, 7>();
  Tiles::template load<6>(b + 32, b_stride);
  Tiles::template load<7>(b + 48, b_stride);
  Tiles::template dp_bf16<2, A, 6>();
  Tiles::template dp_bf16<3, A, 7>();
}

// 16 values in fp32: as they are, or widened exactly from bf16.
ROBERTA_BF16_TARGET inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
ROBERTA_BF16_TARGET inline __m512 load16(const uint16_t* p) {
  const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
}

// dst (32 pairs) = bf16(scale · src[0, 64)). With scale a power of two (1/8 for heads of 64) this
// is bf16(src) scaled exactly, so the scores come out of the tiles scaled, as scale · (Q Kᵀ).
// From a row already in bf16 it is the same: widened exactly, scaled and rounded again.
template <class In>
ROBERTA_BF16_TARGET inline void to_scaled_bf16_pairs(uint32_t* dst, const In* src, __m512 scale) {
  for (size_t c = 0; c < kHead; c += 32) {
    const __m512bh h =
        _mm512_cvtne2ps_pbh(_mm512_mul_ps(load16(src + c + 16), scale), _mm512_mul_ps(load16(src + c), scale));
    _mm512_storeu_si512(dst + c / 2, reinterpret_cast<const __m512i&>(h));
  }
}

// vmax[r] (r < 16) = the maximum of vmax[r] and row r's 64 scores of a panel at s + r * lds whose
// first column is c0 (only the columns below n count).
ROBERTA_BF16_TARGET inline void fold_panel_maxima(__m512 (&vmax)[16], const float* s, size_t lds, size_t c0,
                                                  size_t n) {
  if (c0 + kKeyPanel <= n) {
#pragma GCC unroll 16
    for (size_t r = 0; r < 16; ++r) {
      const float* row = s + r * lds;
      const __m512 a = _mm512_max_ps(_mm512_load_ps(row), _mm512_load_ps(row + 16));
      const __m512 b = _mm512_max_ps(_mm512_load_ps(row + 32), _mm512_load_ps(row + 48));
      vmax[r] = _mm512_max_ps(vmax[r], _mm512_max_ps(a, b));
    }
    return;
  }
  for (size_t c = 0; c0 + c < n; c += 16) {
    const __mmask16 m = lanes_below(n, c0 + c);
    for (size_t r = 0; r < 16; ++r) vmax[r] = _mm512_mask_max_ps(vmax[r], m, vmax[r], _mm512_load_ps(s + r * lds + c));
  }
}

// The AMX attention's chunks of keys (as kKeyChunk): longer, since its steps' fixed costs weigh
// more against its faster products (roberta-kernel-bench, 12 heads, Xeon with AMX: 2048 keys in
// one chunk 908 GFLOP/s, in chunks of 512 800; 4096 keys: chunks of 2048 944-961, 1024 914-921,
// one chunk 826-864), and the query blocks that take each chunk in turn: their running softmaxes
// and contexts are kept, and the chunk's K and V stay in cache for all of them (at 8192 keys a
// head's K and V take 2 MB, which one block at a time would read from L3 for every 16 rows; 8192
// keys, chunks of 2048: groups of 2 blocks 827, 4 853-889, 8 944 GFLOP/s).
constexpr size_t kAmxKeyChunk = 2048, kAmxGroup = 8;

// A tile load waits until the stores of its bytes have reached the cache (no store forwarding
// into tiles), and a vector load of a tile store's bytes likewise: so the steps (a block of 16
// query rows and a chunk of keys) go through a pipeline of three stages, each reading what an
// earlier stage wrote before other work ran in between. Step t: the score tiles of step t; the
// context tiles of step t - 1 (from the P its softmax wrote); the softmax of step t (from its
// scores); step t - 1's context added to its block's (rescaled as the running softmax says) or, at
// the block's last chunk, scaled into ctx. Steps go chunk by chunk through a group of kAmxGroup
// blocks, then the next group; up to kAmxKeyChunk keys, block by block. Q is scaled and rounded for
// the whole head first. (Against one block at a time, with the scale applied to the scores: 12
// heads of 128 tokens 157 -> 150 us in roberta-kernel-bench, int8 8 x 128 tokens 2% faster; Xeon
// with AMX.)
// In: float (Q, K, V in fp32) or uint16_t (already rounded to bf16: the same results). Out: float
// (ctx in fp32, row stride ldc floats) or uint32_t (rounded to bf16 pairs, row stride ldc pairs).
template <class Tiles, class In, class Out>
ROBERTA_BF16_TARGET void attention_head_amx(Out* ctx, size_t ldc, const In* q, const In* k, const In* v, size_t ld,
                                            size_t L, float scale) {
  const size_t panels = (L + kKeyPanel - 1) / kKeyPanel, padded_pairs = panels * kKeyPanel / 2;
  const size_t lds = std::min(panels * kKeyPanel, kAmxKeyChunk), chunk_pairs = lds / 2;  // a step's scores, P
  const size_t blocks = (L + kAmxQueryRows - 1) / kAmxQueryRows, chunks = (L + kAmxKeyChunk - 1) / kAmxKeyChunk;
  constexpr size_t R = kAmxQueryRows, G = kAmxGroup;
  thread_local std::vector<uint32_t> q_buffer, kt_buffer, vt_buffer, p_buffer;
  thread_local std::vector<float> s_buffer, out_buffer, acc_buffer;
  const util::Scratch<uint32_t> q_scratch(q_buffer, blocks * R * kPairs);  // (each 64-byte aligned)
  const util::Scratch<uint32_t> kt_scratch(kt_buffer, panels * kPairs * kKeyPanel);
  const util::Scratch<uint32_t> vt_scratch(vt_buffer, padded_pairs * kHead);
  const util::Scratch<uint32_t> p_scratch(p_buffer, 2 * R * chunk_pairs);  // two steps' P, in turn
  const util::Scratch<float> s_scratch(s_buffer, 2 * R * lds);               // two steps' scores
  const util::Scratch<float> out_scratch(out_buffer, 2 * R * kHead);         // two steps' contexts
  const util::Scratch<float> acc_scratch(acc_buffer, G * R * kHead);         // the group's contexts
  uint32_t *q2 = q_scratch.data(), *kt = kt_scratch.data(), *vt = vt_scratch.data();
  pack_keys_bf16(kt, k, ld, L);
  pack_values_bf16(vt, v, ld, L);
  // V's pair rows past L up to the padding: P is zero there, and 0 times whatever the memory held
  // (a NaN's bits) would not be.
  const size_t value_pairs = (L + 1) / 2;
  std::fill(vt + value_pairs * kHead, vt + padded_pairs * kHead, 0u);
  const __m512 vs = _mm512_set1_ps(scale);
  for (size_t r = 0; r < L; ++r) to_scaled_bf16_pairs(q2 + r * kPairs, q + r * ld, vs);
  std::fill(q2 + L * kPairs, q2 + blocks * R * kPairs, 0u);
  const size_t q_stride = kPairs * 4, s_stride = lds * 4, p_stride = chunk_pairs * 4, b_stride = kKeyPanel * 4;
  RunningSoftmax softmax_of[G][R];               // per block of the group (block % G)
  float row_max[2][R], rescale[2][R], inv[2][R];  // per step, in turn
  struct Step {
    size_t block, chunk;
    bool first() const { return chunk == 0; }
  };
  const auto step = [&](size_t t) {  // chunk by chunk through a group's blocks
    const size_t g0 = t / (G * chunks) * G, in_group = std::min(G, blocks - g0), i = t - g0 * chunks;
    return Step{g0 + i % in_group, i / in_group};
  };
  const auto rows_of = [&](Step st) { return std::min(R, L - st.block * R); };
  const auto keys_of = [&](Step st) { return std::min(kAmxKeyChunk, L - st.chunk * kAmxKeyChunk); };
  const auto last = [&](Step st) { return st.chunk + 1 == chunks; };
  const auto s_of = [&](size_t t) { return s_scratch.data() + (t & 1) * R * lds; };
  const auto p_of = [&](size_t t) { return p_scratch.data() + (t & 1) * R * chunk_pairs; };
  const auto out_of = [&](size_t t) { return out_scratch.data() + (t & 1) * R * kHead; };
  const auto scores = [&](size_t t) ROBERTA_BF16_TARGET {
    const Step st = step(t);
    Tiles::template load<4>(q2 + st.block * R * kPairs, q_stride);
    Tiles::template load<5>(q2 + st.block * R * kPairs + 16, q_stride);
    float* s = s_of(t);
    const uint32_t* kc = kt + st.chunk * kAmxKeyChunk * kPairs;  // the chunk's first panel
    // The rows' maxima, taken from each panel's scores while the tiles compute the next panel's
    // (a vector load of a tile store's bytes waits for the store; a pass over the step's scores
    // afterwards read them from L2: ~14% of a bf16 pass of 8192 tokens in `perf`).
    __m512 vmax[R];
    for (size_t r = 0; r < R; ++r) vmax[r] = _mm512_set1_ps(-INFINITY);
    const size_t n = keys_of(st);
    size_t p = 0;
    for (; p * kKeyPanel < n; ++p) {
      const uint32_t* kp = kc + p * kPairs * kKeyPanel;  // pair c's 64 keys at kp + c * 64
      Tiles::template zero<0>();
      Tiles::template zero<1>();
      Tiles::template zero<2>();
      Tiles::template zero<3>();
      amx_score_step<Tiles, 4>(kp, b_stride);                    // pairs 0 .. 15
      amx_score_step<Tiles, 5>(kp + 16 * kKeyPanel, b_stride);  // pairs 16 .. 31
      if (p > 0) fold_panel_maxima(vmax, s + (p - 1) * kKeyPanel, lds, (p - 1) * kKeyPanel, n);
      float* sp = s + p * kKeyPanel;
      Tiles::template store<0>(sp, s_stride);
      Tiles::template store<1>(sp + 16, s_stride);
      Tiles::template store<2>(sp + 32, s_stride);
      Tiles::template store<3>(sp + 48, s_stride);
    }
    fold_panel_maxima(vmax, s + (p - 1) * kKeyPanel, lds, (p - 1) * kKeyPanel, n);
    for (size_t r = 0; r < R; ++r) row_max[t & 1][r] = _mm512_reduce_max_ps(vmax[r]);
  };
  // the chunk's padded pairs: its panels' (P is zero past its keys)
  const auto pairs_of = [&](Step st) { return (keys_of(st) + kKeyPanel - 1) / kKeyPanel * kKeyPanel / 2; };
  const auto softmax = [&](size_t t) ROBERTA_BF16_TARGET {
    const Step st = step(t);
    const size_t rows = rows_of(st), n = keys_of(st);
    const float* s = s_of(t);
    uint32_t* p2 = p_of(t);
    RunningSoftmax* running = softmax_of[st.block % G];
    const size_t pairs = pairs_of(st);
    for (size_t r = 0; r < rows; ++r) {  // (zero past n: the odd key's partner and the padding)
      const float* row = s + r * lds;
      const float max = running[r].next(row_max[t & 1][r], st.first(), rescale[t & 1][r]);
      inv[t & 1][r] = running[r].add(softmax_exp_bf16(row, n, 2 * pairs, max, p2 + r * chunk_pairs), st.first(),
                                     rescale[t & 1][r]);
    }
    for (size_t r = rows; r < R; ++r) std::fill_n(p2 + r * chunk_pairs, pairs, 0u);
  };
  const auto context = [&](size_t t) ROBERTA_BF16_TARGET {
    const Step st = step(t);
    const uint32_t* p2 = p_of(t);
    const uint32_t* vc = vt + st.chunk * kAmxKeyChunk / 2 * kHead;  // the chunk's first pair row
    Tiles::template zero<0>();
    Tiles::template zero<1>();
    Tiles::template zero<2>();
    Tiles::template zero<3>();
    for (size_t c = 0, pairs = pairs_of(st); c < pairs; c += 16) {  // 16 key pairs a step
      const uint32_t* vb = vc + c * kHead;            // pair row i's 64 columns at vb + i * 64
      // (B in three tiles in turn: a load into the tile that the product before still reads waits)
      Tiles::template load<4>(p2 + c, p_stride);
      Tiles::template load<5>(vb, b_stride);
      Tiles::template load<6>(vb + 16, b_stride);
      Tiles::template load<7>(vb + 32, b_stride);
      Tiles::template dp_bf16<0, 4, 5>();
      Tiles::template dp_bf16<1, 4, 6>();
      Tiles::template dp_bf16<2, 4, 7>();
      Tiles::template load<5>(vb + 48, b_stride);
      Tiles::template dp_bf16<3, 4, 5>();
    }
    float* out = out_of(t);
    Tiles::template store<0>(out, kHead * 4);
    Tiles::template store<1>(out + 16, kHead * 4);
    Tiles::template store<2>(out + 32, kHead * 4);
    Tiles::template store<3>(out + 48, kHead * 4);
  };
  const auto finish = [&](size_t t) ROBERTA_BF16_TARGET {
    const Step st = step(t);
    const float* out = out_of(t);
    float* acc = acc_scratch.data() + st.block % G * R * kHead;  // (not used with one chunk)
    for (size_t r = 0, rows = rows_of(st); r < rows; ++r) {
      const float* o = out + r * kHead;
      float* a = acc + r * kHead;
      __m512 x[4];
      for (size_t c = 0; c < 4; ++c) {
        x[c] = _mm512_load_ps(o + 16 * c);
        if (!st.first()) x[c] = _mm512_fmadd_ps(_mm512_set1_ps(rescale[t & 1][r]), _mm512_load_ps(a + 16 * c), x[c]);
      }
      if (!last(st)) {
        for (size_t c = 0; c < 4; ++c) _mm512_store_ps(a + 16 * c, x[c]);
        continue;
      }
      const __m512 f = _mm512_set1_ps(inv[t & 1][r]);
      for (size_t c = 0; c < 4; ++c) x[c] = _mm512_mul_ps(x[c], f);
      if constexpr (std::is_same_v<Out, uint32_t>) {
        for (size_t c = 0; c < 2; ++c) {
          const __m512bh h = _mm512_cvtne2ps_pbh(x[2 * c + 1], x[2 * c]);
          _mm512_storeu_si512(ctx + (st.block * R + r) * ldc + 16 * c, reinterpret_cast<const __m512i&>(h));
        }
      } else {
        for (size_t c = 0; c < 4; ++c) _mm512_storeu_ps(ctx + (st.block * R + r) * ldc + 16 * c, x[c]);
      }
    }
  };
  Tiles::configure();
  const size_t steps = blocks * chunks;
  for (size_t t = 0; t <= steps; ++t) {
    if (t < steps) scores(t);
    if (t >= 1) context(t - 1);
    if (t < steps) softmax(t);
    if (t >= 1) finish(t - 1);
  }
  Tiles::release();
}
#undef ROBERTA_BF16_TARGET
#endif
}  // namespace

bool bf16_attention_pays() { return runtime::plan().bf16_attention; }

std::string attention_path() {
  const runtime::KernelPlan& plan = runtime::plan();
  const bool forced = plan.settings.bf16_attention.has_value();
  if (plan.bf16_attention)
    return std::string(plan.isa >= Isa::kAmx ? "bf16 (AMX tiles" : "bf16 (AVX512-BF16") +
           (forced ? ", ROBERTA_ATTENTION)" : ", this CPU model's choice)");
  if (plan.isa < Isa::kAvx512Bf16) return "fp32 (no AVX512-BF16 here, or ROBERTA_ISA below avx512bf16)";
  return forced ? "fp32 (ROBERTA_ATTENTION)"
                : "fp32 (this CPU model's choice: its bf16 dot product is no faster than its fp32 FMAs)";
}

void self_attention(float* ctx, const float* qkv, const size_t* offsets, size_t num_sequences, size_t heads,
                    size_t head_size, const RelativePositions& relative, AttentionPrecision precision) {
  const size_t H = heads * head_size, ld = 3 * H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  const bool avx2 = !relative.distance && head_size == 64 && usable_isa() >= Isa::kAvx2;
  const bool fast = avx2 && usable_isa() >= Isa::kAvx512;
  const bool bf16 = fast && precision == AttentionPrecision::kBf16 && usable_isa() >= Isa::kAvx512Bf16;
  const bool tiles = bf16 && usable_isa() >= Isa::kAmx;
  ThreadPool::global()->parallel_for(num_sequences * heads, [&](size_t task) {
    const size_t s = task / heads, h = task % heads;
    const size_t begin = offsets[s], L = offsets[s + 1] - begin;
    if (L == 0) return;
    const float* q = qkv + begin * ld + h * head_size;
    float* out = ctx + begin * H + h * head_size;
#if defined(__x86_64__)
    if (tiles) return attention_head_amx<amx::HardwareTiles>(out, H, q, q + H, q + 2 * H, ld, L, scale);
    if (bf16) return attention_head_bf16(out, H, q, q + H, q + 2 * H, ld, L, scale);
    if (fast) return attention_head_fp32<Avx512Kernels>(out, H, q, q + H, q + 2 * H, ld, L, scale);
    if (avx2) return attention_head_fp32<Avx2Kernels>(out, H, q, q + H, q + 2 * H, ld, L, scale);
#endif
    thread_local std::vector<float> scores_buffer;
    const util::Scratch<float> scores(scores_buffer, L * L);
    const float* k = q + H;
    const float* v = q + 2 * H;
    const int n = static_cast<int>(L), d = static_cast<int>(head_size);
    if (!relative.distance) {
      // scores (L, L) = scale · Q Kᵀ
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, scale, q, static_cast<int>(ld), k,
                  static_cast<int>(ld), 0.0f, scores.data(), n);
    } else {
      // scores = scale · (Q Kᵀ + relative terms), as transformers adds them before scaling.
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, 1.0f, q, static_cast<int>(ld), k,
                  static_cast<int>(ld), 0.0f, scores.data(), n);
      // E_L (2L - 1, d): the distances -(L-1) .. L-1, i.e. rows P - L .. P + L - 2 of E;
      // row j of E_L is distance j - (L - 1). qe (L, 2L - 1) = Q E_Lᵀ, and ke likewise for K.
      const size_t W = 2 * L - 1;
      const float* e = relative.distance + (relative.max_positions - L) * head_size;
      thread_local std::vector<float> rel_buffer;
      const util::Scratch<float> rel(rel_buffer, 2 * L * W);
      float* qe = rel.data();
      float* ke = rel.data() + L * W;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, static_cast<int>(W), d, 1.0f, q, static_cast<int>(ld), e,
                  d, 0.0f, qe, static_cast<int>(W));
      if (relative.key_query)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, static_cast<int>(W), d, 1.0f, k, static_cast<int>(ld),
                    e, d, 0.0f, ke, static_cast<int>(W));
      for (size_t l = 0; l < L; ++l) {
        float* row = scores.data() + l * L;
        for (size_t r = 0; r < L; ++r) {
          const size_t j = l + L - 1 - r;  // distance l - r, shifted into [0, 2L - 1)
          float sum = row[r] + qe[l * W + j];
          if (relative.key_query) sum += ke[r * W + j];
          row[r] = sum / std::sqrt(static_cast<float>(head_size));
        }
      }
    }
    for (size_t i = 0; i < L; ++i) softmax_row(scores.data() + i * L, L);
    // ctx (L, d) = P V
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, n, 1.0f, scores.data(), n, v, static_cast<int>(ld),
                0.0f, out, static_cast<int>(H));
  });
}

bool attention_takes_bf16(size_t head_size, const RelativePositions& relative, AttentionPrecision precision) {
  return precision == AttentionPrecision::kBf16 && head_size == kHead && !relative.distance &&
         usable_isa() >= Isa::kAmx;
}

namespace {
// ctx (fp32, or bf16 pairs) from head-by-head bf16 Q, K, V on the tiles (Tiles) or emulated.
template <class Tiles, class Out>
void attention_from_bf16(Out* ctx, const uint16_t* qkv16, const size_t* offsets, size_t num_sequences, size_t heads,
                         size_t head_size, const RelativePositions& relative, AttentionPrecision precision,
                         bool parallel) {
  if (!std::is_same_v<Tiles, amx::EmulatedTiles> && !attention_takes_bf16(head_size, relative, precision))
    throw Error("self_attention: bf16 Q, K, V need the AMX attention (bf16 precision, heads of 64, absolute "
                "positions, a CPU with AMX; attention_takes_bf16)");
#if defined(__x86_64__)
  const size_t H = heads * kHead, T = offsets[num_sequences], part = heads * T * kHead;
  constexpr size_t kPerValue = std::is_same_v<Out, uint32_t> ? 2 : 1;  // (values per element of ctx)
  const size_t ldc = H / kPerValue, per_head = kHead / kPerValue;
  const auto task = [&](size_t t) {
    const size_t s = t / heads, h = t % heads;
    const size_t begin = offsets[s], L = offsets[s + 1] - begin;
    if (L == 0) return;
    const uint16_t* q = qkv16 + (h * T + begin) * kHead;
    attention_head_amx<Tiles>(ctx + begin * ldc + h * per_head, ldc, q, q + part, q + 2 * part, kHead, L, 0.125f);
  };
  if (parallel)
    ThreadPool::global()->parallel_for(num_sequences * heads, task);
  else
    for (size_t t = 0; t < num_sequences * heads; ++t) task(t);
#else
  (void)ctx, (void)qkv16, (void)offsets, (void)num_sequences, (void)heads, (void)parallel;
  throw Error("the AMX attention is x86-64 only");
#endif
}
}  // namespace

void self_attention(float* ctx, const uint16_t* qkv16, const size_t* offsets, size_t num_sequences, size_t heads,
                    size_t head_size, const RelativePositions& relative, AttentionPrecision precision) {
  attention_from_bf16<amx::HardwareTiles>(ctx, qkv16, offsets, num_sequences, heads, head_size, relative, precision,
                                          true);
}

void self_attention(uint32_t* ctx_pairs, const uint16_t* qkv16, const size_t* offsets, size_t num_sequences,
                    size_t heads, size_t head_size, const RelativePositions& relative, AttentionPrecision precision) {
  attention_from_bf16<amx::HardwareTiles>(ctx_pairs, qkv16, offsets, num_sequences, heads, head_size, relative,
                                          precision, true);
}

void self_attention_amx_emulated(float* ctx, const uint16_t* qkv16, const size_t* offsets, size_t num_sequences,
                                 size_t heads) {
  attention_from_bf16<amx::EmulatedTiles>(ctx, qkv16, offsets, num_sequences, heads, kHead, {},
                                          AttentionPrecision::kBf16, false);
}

void self_attention_amx_emulated(uint32_t* ctx_pairs, const uint16_t* qkv16, const size_t* offsets,
                                 size_t num_sequences, size_t heads) {
  attention_from_bf16<amx::EmulatedTiles>(ctx_pairs, qkv16, offsets, num_sequences, heads, kHead, {},
                                          AttentionPrecision::kBf16, false);
}

void self_attention_amx_emulated(float* ctx, const float* qkv, const size_t* offsets, size_t num_sequences,
                                 size_t heads) {
#if defined(__x86_64__)
  const size_t H = heads * kHead, ld = 3 * H;
  for (size_t s = 0; s < num_sequences; ++s)
    for (size_t h = 0; h < heads; ++h) {
      const size_t begin = offsets[s], L = offsets[s + 1] - begin;
      if (L == 0) continue;
      const float* q = qkv + begin * ld + h * kHead;
      attention_head_amx<amx::EmulatedTiles>(ctx + begin * H + h * kHead, H, q, q + H, q + 2 * H, ld, L, 0.125f);
    }
#else
  (void)ctx, (void)qkv, (void)offsets, (void)num_sequences, (void)heads;
  throw Error("the AMX attention is x86-64 only");
#endif
}

}  // namespace roberta::kernels
