#pragma once
// The fp32 attention of one (sequence, head), written once for the AVX-512, AVX2 and NEON register
// blocks (fp32_avx512.cpp, fp32_avx2.cpp, fp32_neon.cpp instantiate it with their kernels). Internal.
#if defined(__x86_64__) || defined(__aarch64__)
#include <cstring>
#include <vector>

#include "kernels/attention/blocks.h"
#include "util/scratch.h"

namespace roberta::kernels::attention_impl {

// The fp32 kernels of one instruction set, for attention_head_fp32.
using Fp32ScoreFn = void (*)(float*, size_t, const float*, size_t, const float*, size_t, float, float*);
using Fp32ContextFn = void (*)(float*, size_t, const float*, size_t, const float*, size_t, size_t, const float*,
                               const float*);

// ctx (L, 64) with row stride ldc = softmax(scale · Q Kᵀ) V for one (sequence, head); q, k, v
// have row stride ld. Kernels: Avx512Kernels, Avx2Kernels or NeonKernels.
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
  // page per row, and past ~2048 keys more pages than the TLB holds (docs/performance.md#figures-behind-the-code).
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

}  // namespace roberta::kernels::attention_impl
#endif
