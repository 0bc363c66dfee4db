#pragma once
// What the attention kernels of src/kernels/attention/ share: the head size they take, their block
// sizes, the running softmax over chunks of keys, the AVX-512 stores, and one entry point per
// instruction set (each in its own file). Internal; the public entry is kernels/attention.h.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/attention.h"

namespace roberta::kernels::attention_impl {

constexpr size_t kHead = 64;  // the head size the register-block kernels take (every RoBERTa size)

// out (L, d), row stride ldo = softmax(scale · Q Kᵀ + relative terms) V for one (sequence, head)
// of any size d = head_size, through OpenBLAS (general.cpp); q, k, v with row stride ld.
void attention_head_general(float* out, size_t ldo, const float* q, const float* k, const float* v, size_t ld,
                            size_t L, size_t head_size, float scale, const RelativePositions& relative);

// The register-block kernels (AVX-512, AVX2, NEON) take query rows in blocks of kQueryBlock:
// their scores (kQueryBlock, L), or of a chunk of kKeyChunk keys at a time, are computed,
// softmaxed and multiplied by V while they are in cache, so the full (L, L) score matrix never
// exists.
constexpr size_t kQueryBlock = 48;  // query rows whose scores are live at once (a multiple of 6)
// Keys whose scores are live at once (a multiple of every kernel's key panel). A longer sequence's keys go in
// chunks of this many with FlashAttention's running softmax: each chunk's exponentials are taken
// from the maximum of the row's scores so far, and the context of the chunks before is scaled by
// exp(old maximum - new) when the maximum grows. The scores of a block of query rows then stay in
// L2 whatever the length (at 8192 keys, all of a block's scores take 1.5 MB in fp32) and long
// sequences run at the rate of short ones; 512 was the best chunk measured
// (docs/performance.md#figures-behind-the-code).
// Up to this many keys there is one chunk and the results are those of a softmax over the whole
// row at once. (The AMX kernel's chunks: kAmxKeyChunk.)
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

#if defined(__aarch64__)
// One (sequence, head) of size 64 in NEON register blocks (fp32_neon.cpp), as attention_head_avx2.
void attention_head_neon(float* ctx, size_t ldc, const float* q, const float* k, const float* v, size_t ld, size_t L,
                         float scale);
#endif

}  // namespace roberta::kernels::attention_impl

#if defined(__x86_64__)
#include "kernels/avx2_math.h"
#include "kernels/avx512_math.h"
#include "kernels/intrinsics.h"
#include "kernels/vector_math.h"

#define ROBERTA_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace roberta::kernels::attention_impl {

// Fast path for one (sequence, head) with head size 64 (every RoBERTa size): AVX-512 (or AVX2:
// Avx2Kernels) register blocks instead of three OpenBLAS calls, which repack their operands on
// every call (docs/performance.md#figures-behind-the-code), in the query blocks and key chunks
// above.
constexpr size_t kKeyPanel = 64;  // keys per panel of the packed Kᵀ (4 zmm: one broadcast feeds 4 products)

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

// The attention of one (sequence, head) of 64, one function per instruction set:
//   ctx (L, 64), row stride ldc = softmax(scale · Q Kᵀ) V,  q, k, v: (L, 64) with row stride ld.
// fp32 register blocks, AVX-512 (fp32_avx512.cpp) and AVX2 (fp32_avx2.cpp):
void attention_head_avx512(float* ctx, size_t ldc, const float* q, const float* k, const float* v, size_t ld, size_t L,
                           float scale);
void attention_head_avx2(float* ctx, size_t ldc, const float* q, const float* k, const float* v, size_t ld, size_t L,
                         float scale);
// bf16 products with fp32 sums, AVX512-BF16 (bf16_avx512.cpp):
void attention_head_bf16(float* ctx, size_t ldc, const float* q, const float* k, const float* v, size_t ld, size_t L,
                         float scale);
// bf16 on AMX tiles (amx_head.h; Tiles: amx::HardwareTiles, or the tests' EmulatedTiles). In:
// float or uint16_t (bf16); Out: float, or uint32_t (bf16 pairs, row stride ldc pairs).
template <class Tiles, class In, class Out>
ROBERTA_BF16_TARGET void attention_head_amx(Out* ctx, size_t ldc, const In* q, const In* k, const In* v, size_t ld,
                                            size_t L, float scale);

}  // namespace roberta::kernels::attention_impl
#endif
