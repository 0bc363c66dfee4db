#pragma once
// The bf16 attention of one (sequence, head) on AMX tiles, over a tile policy (amx_tiles.h):
// attention/amx.cpp builds it on the hardware tiles; the tests build it on an emulation.
#include <algorithm>
#include <vector>

#include "kernels/amx_tiles.h"
#include "kernels/attention/bf16_pack.h"
#include "util/scratch.h"

#if defined(__x86_64__)
namespace roberta::kernels::attention_impl {

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
// more against its faster products; and the query blocks that take each chunk in turn: their
// running softmaxes and contexts are kept, and the chunk's K and V stay in cache for all of them
// (at 8192 keys a head's K and V take 2 MB, which one block at a time would read from L3 for every
// 16 rows). Both sizes are the best measured (docs/performance.md#figures-behind-the-code).
constexpr size_t kAmxKeyChunk = 2048, kAmxGroup = 8;

// The steps of one head on AMX tiles (attention_head_amx): its scratch and sizes, the running
// softmax of each query block of the group, and the four stages of a step.
template <class Tiles, class Out>
struct AmxHead {
  static constexpr size_t R = kAmxQueryRows, G = kAmxGroup;
  struct Step {
    size_t block, chunk;
    bool first() const { return chunk == 0; }
  };

  Out* ctx;
  size_t ldc, L;
  size_t lds, chunk_pairs, blocks, chunks;  // lds: a step's scores' row stride; chunk_pairs: its P's
  const uint32_t *q2, *kt, *vt;                      // Q scaled as bf16 pairs, K and V packed
  uint32_t* p_base;                                  // two steps' P, in turn
  float *s_base, *out_base, *acc_base;               // two steps' scores and contexts; the group's contexts
  RunningSoftmax softmax_of[G][R]{};                 // per block of the group (block % G)
  float row_max[2][R]{}, rescale[2][R]{}, inv[2][R]{};  // per step, in turn

  Step step(size_t t) const {  // chunk by chunk through a group's blocks
    const size_t g0 = t / (G * chunks) * G, in_group = std::min(G, blocks - g0), i = t - g0 * chunks;
    return Step{g0 + i % in_group, i / in_group};
  }
  size_t rows_of(Step st) const { return std::min(R, L - st.block * R); }
  size_t keys_of(Step st) const { return std::min(kAmxKeyChunk, L - st.chunk * kAmxKeyChunk); }
  bool last(Step st) const { return st.chunk + 1 == chunks; }
  float* s_of(size_t t) const { return s_base + (t & 1) * R * lds; }
  uint32_t* p_of(size_t t) const { return p_base + (t & 1) * R * chunk_pairs; }
  float* out_of(size_t t) const { return out_base + (t & 1) * R * kHead; }
  // the chunk's padded pairs: its panels' (P is zero past its keys)
  size_t pairs_of(Step st) const { return (keys_of(st) + kKeyPanel - 1) / kKeyPanel * kKeyPanel / 2; }
  static constexpr size_t q_stride = kPairs * 4, b_stride = kKeyPanel * 4;

  // Step t's scores (R rows x the chunk's keys) into s_of(t), and each row's maximum.
  __attribute__((always_inline)) ROBERTA_BF16_TARGET void scores(size_t t) {
    const size_t s_stride = lds * 4;
    const Step st = step(t);
    Tiles::template load<4>(q2 + st.block * R * kPairs, q_stride);
    Tiles::template load<5>(q2 + st.block * R * kPairs + 16, q_stride);
    float* s = s_of(t);
    const uint32_t* kc = kt + st.chunk * kAmxKeyChunk * kPairs;  // the chunk's first panel
    // The rows' maxima, taken from each panel's scores while the tiles compute the next panel's
    // (a vector load of a tile store's bytes waits for the store; a pass over the step's scores
    // afterwards would read them again from L2).
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
  }

  // Step t's softmax: P (bf16 pairs) from its scores, the running softmax of its block updated.
  __attribute__((always_inline)) ROBERTA_BF16_TARGET void softmax(size_t t) {
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
  }

  // Step t's context, P · V, into out_of(t).
  __attribute__((always_inline)) ROBERTA_BF16_TARGET void context(size_t t) {
    const size_t p_stride = chunk_pairs * 4;
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
  }

  // Step t's context added to its block's (rescaled as the running softmax says) or, at the
  // block's last chunk, scaled into ctx.
  __attribute__((always_inline)) ROBERTA_BF16_TARGET void finish(size_t t) {
    const Step st = step(t);
    const float* out = out_of(t);
    float* a0 = acc_base + st.block % G * R * kHead;  // (not used with one chunk)
    for (size_t r = 0, rows = rows_of(st); r < rows; ++r) {
      const float* o = out + r * kHead;
      float* a = a0 + r * kHead;
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
  }
};

// A tile load waits until the stores of its bytes have reached the cache (no store forwarding
// into tiles), and a vector load of a tile store's bytes likewise: so the steps (a block of 16
// query rows and a chunk of keys) go through a pipeline of three stages, each reading what an
// earlier stage wrote before other work ran in between. Step t: the score tiles of step t; the
// context tiles of step t - 1 (from the P its softmax wrote); the softmax of step t (from its
// scores); step t - 1's context added to its block's (rescaled as the running softmax says) or, at
// the block's last chunk, scaled into ctx. Steps go chunk by chunk through a group of kAmxGroup
// blocks, then the next group; up to kAmxKeyChunk keys, block by block. Q is scaled and rounded for
// the whole head first (faster than one block at a time with the scale applied to the scores
// (docs/performance.md#figures-behind-the-code)).
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
  AmxHead<Tiles, Out> head{.ctx = ctx,
                           .ldc = ldc,
                           .L = L,
                           .lds = lds,
                           .chunk_pairs = chunk_pairs,
                           .blocks = blocks,
                           .chunks = chunks,
                           .q2 = q2,
                           .kt = kt,
                           .vt = vt,
                           .p_base = p_scratch.data(),
                           .s_base = s_scratch.data(),
                           .out_base = out_scratch.data(),
                           .acc_base = acc_scratch.data()};
  Tiles::configure();
  const size_t steps = blocks * chunks;
  for (size_t t = 0; t <= steps; ++t) {
    if (t < steps) head.scores(t);
    if (t >= 1) head.context(t - 1);
    if (t < steps) head.softmax(t);
    if (t >= 1) head.finish(t - 1);
  }
  Tiles::release();
}

}  // namespace roberta::kernels::attention_impl
#endif
