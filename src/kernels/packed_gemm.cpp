#include "packed_gemm.h"

#include "intrinsics.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "roberta/error.h"
#include "util/thread_pool.h"
#include "activations.h"
#include "amx_gemm.h"
#include "avx2_math.h"
#include "avx512_math.h"
#include "block_loop.h"
#include "isa.h"
#include "panel_prefetch.h"
#include "runtime/plan.h"
#include "util/scratch.h"

namespace roberta::kernels {

namespace {
// dst[kk * ldd + j] = src[j * lds + kk] for rows j < rows, kk in [k0, k1).
void transpose_scalar(const float* src, size_t lds, size_t rows, size_t k0, size_t k1, float* dst, size_t ldd) {
  for (size_t j = 0; j < rows; ++j)
    for (size_t kk = k0; kk < k1; ++kk) dst[kk * ldd + j] = src[j * lds + kk];
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
// The same, 8 x 8 blocks at a time through registers; the edges as transpose_scalar does them.
__attribute__((target("avx2"))) void transpose_avx2(const float* src, size_t lds, size_t rows, size_t k0, size_t k1,
                                                    float* dst, size_t ldd) {
  const size_t full_rows = rows / 8 * 8, k8 = k0 + (k1 - k0) / 8 * 8;
  for (size_t j = 0; j < full_rows; j += 8) {
    const float* s = src + j * lds;
    for (size_t kk = k0; kk < k8; kk += 8) {
      __m256 r[8];
      for (size_t i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(s + i * lds + kk);
      transpose8(r);
      float* d = dst + kk * ldd + j;
      for (size_t c = 0; c < 8; ++c) _mm256_storeu_ps(d + c * ldd, r[c]);
    }
    transpose_scalar(s, lds, 8, k8, k1, dst + j, ldd);
  }
  transpose_scalar(src + full_rows * lds, lds, rows - full_rows, k0, k1, dst + full_rows, ldd);
}
#endif
}  // namespace

PackedWeight::PackedWeight(const float* w, size_t n, size_t k)
    : n_(n), k_(k), data_(static_cast<float*>(::operator new[](bytes(), std::align_val_t(64)))) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
  const auto transpose = usable_isa() >= Isa::kAvx2 ? transpose_avx2 : transpose_scalar;
#else
  const auto transpose = transpose_scalar;
#endif
  // Panels are independent: pack them on the thread pool. Within a panel, walk k in tiles so
  // that both the 32 source rows and the destination stay in cache.
  ThreadPool::global()->parallel_for(panels(), [&](size_t p) {
    float* dst = data_.get() + p * k * kPanel;
    const size_t rows = std::min(kPanel, n - p * kPanel);
    if (rows < kPanel) std::memset(dst, 0, k * kPanel * sizeof(float));
    for (size_t k0 = 0; k0 < k; k0 += 64) transpose(w + p * kPanel * k, k, rows, k0, std::min(k, k0 + 64), dst, kPanel);
  });
}

namespace {

constexpr size_t kMaxRows = 12;  // the most rows of y one register block holds
// k per pass over a panel: K in equal slices of at most kMaxDepth rows of the panel (fp32: k;
// bf16: pairs of k). Each pass starts the block's accumulators from y again, and y's rows are far
// apart (one line per row per panel), so they come back from L2; with short (256-row) slices that
// is a visible cost (docs/performance.md#figures-behind-the-code), while a longer slice of the
// panel (128 KB at 1024) still streams from L2 in time, prefetched.
constexpr size_t kMaxDepth = 1024;
size_t depth_slice(size_t k, size_t max_depth) {
  const size_t passes = std::max<size_t>(1, (k + max_depth - 1) / max_depth);
  return std::max<size_t>(1, (k + passes - 1) / passes);
}

// One block of rows: y[r][0..cols) (+)= sum over k in [k0, k1) of x[r][k] * panel[k][0..32) for
// r < rows. `first`: the block is written for the first time, so it starts from 0. `bias`, when
// not null, is added after the products (pass it with the last k slice), as PyTorch's addmm rounds.
// X is the input element type as the kernel reads it (float, or a pair of bf16 as uint32).
// A kernel's own function takes at most its register block's rows; the Kernel's `fn` takes any
// number (a whole row chunk of for_each_block) and walks them in register blocks (over_blocks).
template <typename X, typename W>
using BlockFn = void (*)(const X* x, size_t ldx, size_t rows, const W* panel, size_t k0, size_t k1, const float* bias,
                         bool first, float* y, size_t ldy, size_t cols);

// F over any number of rows, MR at a time: one call per row chunk instead of one per register
// block (a call with 11 arguments per 8 x 32 x 256 block is a measurable share of a product;
// docs/performance.md#figures-behind-the-code).
template <typename X, typename W, BlockFn<X, W> F, size_t MR>
void over_blocks(const X* x, size_t ldx, size_t rows, const W* panel, size_t k0, size_t k1, const float* bias,
                 bool first, float* y, size_t ldy, size_t cols) {
  for (size_t r = 0; r < rows; r += MR)
    F(x + r * ldx, ldx, std::min(MR, rows - r), panel, k0, k1, bias, first, y + r * ldy, ldy, cols);
}

// The bf16 value h as fp32 (whose high half it is).
inline float widen_bf16(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }

// The fp32 kernels take W = float: the panel of a PackedWeight, one k a step. With W = uint16_t
// they run the bf16 product on CPUs without bf16 instructions: the panel of a PackedWeightBf16, one
// pair of k a step (k0, k1 count pairs), each bf16 weight widened to fp32 in registers, x already
// rounded to bf16 and widened (round_bf16_widened_rows, widen_bf16_rows; row stride ldx >= 2 * k1).
// A product of two bf16 values is exact in fp32 (short of underflow), so the sums are those of
// vdpbf16ps up to the order of the additions and its flushing of denormals; at the fp32 FMA rate,
// from half the weight bytes.
template <typename W = float>
void block_portable(const float* x, size_t ldx, size_t rows, const W* panel, size_t k0, size_t k1, const float* bias,
                    bool first, float* y, size_t ldy, size_t cols) {
  float acc[kMaxRows][PackedWeight::kPanel];
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < PackedWeight::kPanel; ++j)
      acc[r][j] = first || j >= cols ? 0.0f : y[r * ldy + j];
  for (size_t k = k0; k < k1; ++k) {
    for (size_t r = 0; r < rows; ++r) {
      if constexpr (std::is_same_v<W, float>) {
        const float a = x[r * ldx + k], *b = panel + k * PackedWeight::kPanel;
        for (size_t j = 0; j < PackedWeight::kPanel; ++j) acc[r][j] += a * b[j];
      } else {
        const float a0 = x[r * ldx + 2 * k], a1 = x[r * ldx + 2 * k + 1];
        const uint16_t* b = panel + k * 2 * PackedWeightBf16::kPanel;
        for (size_t j = 0; j < PackedWeightBf16::kPanel; ++j) {
          acc[r][j] += a0 * widen_bf16(b[2 * j]);
          acc[r][j] += a1 * widen_bf16(b[2 * j + 1]);
        }
      }
    }
  }
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < cols; ++j) y[r * ldy + j] = bias ? acc[r][j] + bias[j] : acc[r][j];
}

#if defined(__x86_64__)
// How far ahead (in k steps of one 128-byte panel row) the kernel asks for panel rows: into L1
// for the next few, into L2 for the far ones (kAhead), so that a thread streaming weights from
// memory keeps enough requests in flight, which the hardware prefetcher alone does not
// (docs/performance.md#figures-behind-the-code).
constexpr size_t kPrefetchL1 = 48, kPrefetchL2 = 384;

// The panel prefetches of register block `block` of a chunk's `blocks`, one step per 128-byte
// panel row it multiplies by (fp32: 32 floats; bf16: 32 pairs), rows k0 to k1: each step asks for
// the row kPrefetchL1 ahead into L1, and for more into L2:
// - kAhead: the row kPrefetchL2 ahead. Only the first block of a chunk reads the panel from
//   memory; the others find it in L2, and their prefetches ask for rows that are mostly there too,
//   so memory sits idle while they run: a product's time is about its read time plus its compute
//   time.
// - kNextSlice: the block's share of the panel's next k slice (NextSlicePrefetch), so that memory
//   keeps streaming while every block computes. It needs blocks >= 2; the walkers use kAhead for
//   one block (the whole next slice on one block is slower), and the Kernel for products of more
//   than one row chunk (no faster there). Which one a CPU model takes: panel_prefetch()
//   (docs/performance.md#figures-behind-the-code).
template <Prefetch P>
class PanelPrefetch {
 public:
  __attribute__((always_inline)) PanelPrefetch(const void* panel, size_t k0, size_t k1, size_t block, size_t blocks)
      : next_(panel, k0, k1, block, blocks) {}

  // The prefetches that go with panel row `row`.
  __attribute__((always_inline)) void step(const void* row) {
    const char* p = static_cast<const char*>(row);
    _mm_prefetch(p + kPrefetchL1 * 128, _MM_HINT_T0);
    _mm_prefetch(p + kPrefetchL1 * 128 + 64, _MM_HINT_T0);
    if constexpr (P == Prefetch::kNextSlice) {
      next_.step();
    } else {
      _mm_prefetch(p + kPrefetchL2 * 128, _MM_HINT_T1);
      _mm_prefetch(p + kPrefetchL2 * 128 + 64, _MM_HINT_T1);
    }
  }

 private:
  NextSlicePrefetch<2> next_;  // (unused with kAhead)
};

__attribute__((target("avx512f"))) inline __mmask16 low_mask(size_t cols) {
  return cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
}

// Loads (or starts) the MR x 32 accumulators of a block.
template <size_t MR>
__attribute__((target("avx512f"), always_inline)) inline void load_block(__m512 (&c0)[MR], __m512 (&c1)[MR],
                                                                          size_t rows, bool first, const float* y,
                                                                          size_t ldy, size_t cols) {
  const __mmask16 m0 = low_mask(cols), m1 = cols <= 16 ? 0 : low_mask(cols - 16);
  for (size_t r = 0; r < MR; ++r) {
    if (r >= rows || first) {
      c0[r] = c1[r] = _mm512_setzero_ps();
    } else {
      c0[r] = _mm512_maskz_loadu_ps(m0, y + r * ldy);
      c1[r] = _mm512_maskz_loadu_ps(m1, y + r * ldy + 16);
    }
  }
}

// Stores the block (+ bias); with Gelu, GELU of that (the values activation_rows would compute
// from y, bit for bit: the same gelu_avx512), without a pass over y of its own.
template <size_t MR, bool Gelu = false>
__attribute__((target("avx512f"), always_inline)) inline void store_block(const __m512 (&c0)[MR],
                                                                           const __m512 (&c1)[MR], size_t rows,
                                                                           const float* bias, float* y, size_t ldy,
                                                                           size_t cols) {
  const __mmask16 m0 = low_mask(cols), m1 = cols <= 16 ? 0 : low_mask(cols - 16);
  const __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 b1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  for (size_t r = 0; r < rows; ++r) {
    __m512 v0 = bias ? _mm512_add_ps(c0[r], b0) : c0[r], v1 = bias ? _mm512_add_ps(c1[r], b1) : c1[r];
    if constexpr (Gelu) {
      v0 = gelu_avx512(v0);
      v1 = gelu_avx512(v1);
    }
    _mm512_mask_storeu_ps(y + r * ldy, m0, v0);
    _mm512_mask_storeu_ps(y + r * ldy + 16, m1, v1);
  }
}

// MR x 32 block in 2 * MR zmm accumulators; exactly MR rows (blocks_avx512 passes the last rows of
// a chunk to the block of their count); register block `block` of the chunk's `blocks`, for its
// PanelPrefetch. Gelu: GELU applied by the store (pass it with the last k slice only).
// W = uint16_t: a bf16 panel (block_portable), a pair of k a step: its 32 pairs are two registers
// of 16, whose even k is the pair's low half shifted up and whose odd k is the high half.
template <size_t MR, bool Gelu, typename W, Prefetch P>
__attribute__((target("avx512f"))) void block_avx512(const float* x, size_t ldx, const W* panel, size_t k0, size_t k1,
                                                     const float* bias, bool first, float* y, size_t ldy, size_t cols,
                                                     size_t block, size_t blocks) {
  __m512 c0[MR], c1[MR];
  load_block<MR>(c0, c1, MR, first, y, ldy, cols);
  PanelPrefetch<P> prefetch(panel, k0, k1, block, blocks);
  if constexpr (std::is_same_v<W, float>) {
    const float* a = x + k0;
    for (size_t k = k0; k < k1; ++k, ++a) {
      const float* b = panel + k * 32;
      prefetch.step(b);
      const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 16
      for (size_t r = 0; r < MR; ++r) {
        const __m512 av = _mm512_set1_ps(a[r * ldx]);
        c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
        c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
      }
    }
  } else {
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    const float* a = x + 2 * k0;
    for (size_t q = k0; q < k1; ++q, a += 2) {
      const uint16_t* b = panel + q * 64;
      prefetch.step(b);
      const __m512i w0 = _mm512_load_si512(b), w1 = _mm512_load_si512(b + 32);
      const __m512 e0 = _mm512_castsi512_ps(_mm512_slli_epi32(w0, 16)),
                   e1 = _mm512_castsi512_ps(_mm512_slli_epi32(w1, 16)),
                   o0 = _mm512_castsi512_ps(_mm512_and_si512(w0, high)),
                   o1 = _mm512_castsi512_ps(_mm512_and_si512(w1, high));
#pragma GCC unroll 16
      for (size_t r = 0; r < MR; ++r) {
        const __m512 ae = _mm512_set1_ps(a[r * ldx]), ao = _mm512_set1_ps(a[r * ldx + 1]);
        c0[r] = _mm512_fmadd_ps(ae, e0, c0[r]);
        c1[r] = _mm512_fmadd_ps(ae, e1, c1[r]);
        c0[r] = _mm512_fmadd_ps(ao, o0, c0[r]);
        c1[r] = _mm512_fmadd_ps(ao, o1, c1[r]);
      }
    }
  }
  store_block<MR, Gelu>(c0, c1, MR, bias, y, ldy, cols);
}

// Any number of rows (a row chunk): full MR-row blocks inlined into the loop (flatten), the last
// rows through the block of their exact count (a loop over a run-time row count for those is
// slower: docs/performance.md#figures-behind-the-code).
template <size_t MR, bool Gelu, typename W, Prefetch P>
__attribute__((target("avx512f"), flatten)) void blocks_avx512(const float* x, size_t ldx, size_t rows,
                                                              const W* panel, size_t k0, size_t k1,
                                                              const float* bias, bool first, float* y, size_t ldy,
                                                              size_t cols) {
  using Fn = void (*)(const float* x, size_t ldx, const W* panel, size_t k0, size_t k1, const float* bias, bool first,
                      float* y, size_t ldy, size_t cols, size_t block, size_t blocks);
  static constexpr Fn kByRows[] = {
      nullptr,
      block_avx512<1, Gelu, W, P>,
      block_avx512<2, Gelu, W, P>,
      block_avx512<3, Gelu, W, P>,
      block_avx512<4, Gelu, W, P>,
      block_avx512<5, Gelu, W, P>,
      block_avx512<6, Gelu, W, P>,
      block_avx512<7, Gelu, W, P>,
      block_avx512<8, Gelu, W, P>,
      block_avx512<9, Gelu, W, P>,
      block_avx512<10, Gelu, W, P>,
      block_avx512<11, Gelu, W, P>};
  static_assert(MR <= std::size(kByRows));
  if constexpr (P == Prefetch::kNextSlice)
    if (rows <= MR)  // one block: the next slice is slower there (PanelPrefetch)
      return blocks_avx512<MR, Gelu, W, Prefetch::kAhead>(x, ldx, rows, panel, k0, k1, bias, first, y, ldy, cols);
  const size_t blocks = (rows + MR - 1) / MR;
  size_t r = 0;
  for (; r + MR <= rows; r += MR)
    block_avx512<MR, Gelu, W, P>(x + r * ldx, ldx, panel, k0, k1, bias, first, y + r * ldy, ldy, cols, r / MR, blocks);
  if (r < rows)
    kByRows[rows - r](x + r * ldx, ldx, panel, k0, k1, bias, first, y + r * ldy, ldy, cols, r / MR, blocks);
}

// AVX2: an MR x 32 block as two passes of MR rows x 16 columns (for 6 rows 12 accumulators, with
// the two panel vectors and the broadcast 15 of the 16 ymm registers: BLIS's AVX2 6 x 16 kernel);
// exactly MR rows. (Not 4 x 32 in one pass: 16 accumulators and the 4 panel vectors do not fit in
// 16 registers, and it runs at about half of OpenBLAS's AVX2 kernel's rate;
// docs/performance.md#figures-behind-the-code.)
// W = uint16_t: a bf16 panel (block_portable); a pass's 16 columns of a k pair are two registers
// of 8 pairs, the even k's widened and multiplied first, then the odd k's, so that the 12
// accumulators stay in registers (GCC 12 reads the weights again from L1 for the odd k's, and
// the mask from the stack: one load each per k pair). Register block `block` of the chunk's
// `blocks`, for its PanelPrefetch: with kAhead the first pass prefetches, with kNextSlice both do,
// each as a block of its own.
template <size_t MR, typename W, Prefetch P>
__attribute__((target("avx2,fma"))) void block_avx2(const float* x, size_t ldx, const W* panel, size_t k0, size_t k1,
                                                    const float* bias, bool first, float* y, size_t ldy, size_t block,
                                                    size_t blocks) {
  for (size_t h = 0; h < PackedWeight::kPanel; h += 16) {
    const bool prefetching = P == Prefetch::kNextSlice || h == 0;
    PanelPrefetch<P> prefetch(panel, k0, k1, 2 * block + h / 16, 2 * blocks);
    __m256 c0[MR], c1[MR];
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r) {
      c0[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + r * ldy + h);
      c1[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + r * ldy + h + 8);
    }
    if constexpr (std::is_same_v<W, float>) {
      const float* a = x + k0;
      for (size_t k = k0; k < k1; ++k, ++a) {
        const float* b = panel + k * PackedWeight::kPanel;
        if (prefetching) prefetch.step(b);
        const __m256 b0 = _mm256_load_ps(b + h), b1 = _mm256_load_ps(b + h + 8);
#pragma GCC unroll 8
        for (size_t r = 0; r < MR; ++r) {
          const __m256 av = _mm256_broadcast_ss(a + r * ldx);
          c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
          c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
        }
      }
    } else {
      const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
      const float* a = x + 2 * k0;
      for (size_t q = k0; q < k1; ++q, a += 2) {
        const uint16_t* b = panel + q * 64;
        if (prefetching) prefetch.step(b);
        const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 2 * h)),
                      w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 2 * h + 16));
        const __m256 e0 = _mm256_castsi256_ps(_mm256_slli_epi32(w0, 16)),
                     e1 = _mm256_castsi256_ps(_mm256_slli_epi32(w1, 16));
#pragma GCC unroll 8
        for (size_t r = 0; r < MR; ++r) {
          const __m256 ae = _mm256_broadcast_ss(a + r * ldx);
          c0[r] = _mm256_fmadd_ps(ae, e0, c0[r]);
          c1[r] = _mm256_fmadd_ps(ae, e1, c1[r]);
        }
        const __m256 o0 = _mm256_castsi256_ps(_mm256_and_si256(w0, high)),
                     o1 = _mm256_castsi256_ps(_mm256_and_si256(w1, high));
#pragma GCC unroll 8
        for (size_t r = 0; r < MR; ++r) {
          const __m256 ao = _mm256_broadcast_ss(a + r * ldx + 1);
          c0[r] = _mm256_fmadd_ps(ao, o0, c0[r]);
          c1[r] = _mm256_fmadd_ps(ao, o1, c1[r]);
        }
      }
    }
    const __m256 bias0 = bias ? _mm256_loadu_ps(bias + h) : _mm256_setzero_ps();
    const __m256 bias1 = bias ? _mm256_loadu_ps(bias + h + 8) : _mm256_setzero_ps();
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r) {
      _mm256_storeu_ps(y + r * ldy + h, bias ? _mm256_add_ps(c0[r], bias0) : c0[r]);
      _mm256_storeu_ps(y + r * ldy + h + 8, bias ? _mm256_add_ps(c1[r], bias1) : c1[r]);
    }
  }
}

// Any number of rows: 6-row blocks, the last rows through the block of their exact count; a ragged
// last panel (fewer than 32 columns) through the portable loop.
template <typename W, Prefetch P>
__attribute__((target("avx2,fma"), flatten)) void blocks_avx2(const float* x, size_t ldx, size_t rows,
                                                             const W* panel, size_t k0, size_t k1, const float* bias,
                                                             bool first, float* y, size_t ldy, size_t cols) {
  if (cols < PackedWeight::kPanel) {
    for (size_t r = 0; r < rows; r += kMaxRows)
      block_portable<W>(x + r * ldx, ldx, std::min(kMaxRows, rows - r), panel, k0, k1, bias, first, y + r * ldy, ldy,
                        cols);
    return;
  }
  using Fn = void (*)(const float* x, size_t ldx, const W* panel, size_t k0, size_t k1, const float* bias, bool first,
                      float* y, size_t ldy, size_t block, size_t blocks);
  static constexpr Fn kByRows[] = {nullptr,             block_avx2<1, W, P>, block_avx2<2, W, P>,
                                   block_avx2<3, W, P>, block_avx2<4, W, P>, block_avx2<5, W, P>};
  const size_t blocks = (rows + 5) / 6;
  size_t r = 0;
  for (; r + 6 <= rows; r += 6)
    block_avx2<6, W, P>(x + r * ldx, ldx, panel, k0, k1, bias, first, y + r * ldy, ldy, r / 6, blocks);
  if (r < rows) kByRows[rows - r](x + r * ldx, ldx, panel, k0, k1, bias, first, y + r * ldy, ldy, r / 6, blocks);
}
#endif

// W: float for the fp32 product, uint16_t for bf16 on widened values (block_portable).
template <typename W>
struct Kernel {
  BlockFn<float, W> fn;
  size_t rows;  // rows per block
  const char* isa;
  // For products of at most small_max_rows rows: a kernel with smaller blocks (or fn again).
  BlockFn<float, W> small_fn;
  size_t small_rows, small_max_rows;
  // fn and small_fn applying GELU as they store (for the last k slice), or null: GELU after the
  // product, on each finished tile.
  BlockFn<float, W> gelu_fn = nullptr, small_gelu_fn = nullptr;
  // fn and gelu_fn for products of more than one row chunk (more than kChunkBlocks blocks): the
  // same blocks with the panel prefetched ahead (PanelPrefetch) where fn prefetches the next slice.
  BlockFn<float, W> many_fn = fn, many_gelu_fn = gelu_fn;
};

// The best kernel that the CPU and ROBERTA_ISA (kernels/isa.h) allow.
// AVX-512 blocks: 12 x 32 (24 accumulators) or 8 x 32, per CPU model (runtime/cpu.h): with 12 rows
// the panel, re-read from L2 for every block, feeds 24 FMAs per 128-byte row instead of 16, which
// pays where 512-bit FMAs run at full width; products of at most 32 rows keep 8 x 32 (two blocks
// of 8 beat 12 + 4). ROBERTA_FP32_ROWS=8|12 overrides (packed_gemm.h).
// The panel prefetch: panel_prefetch() (panel_prefetch.h).
#if defined(__x86_64__)
// The kernel whose blocks prefetch by P, in products of one row chunk; by kAhead in larger ones
// (where the next slice is no faster: docs/performance.md#figures-behind-the-code).
template <typename W, Prefetch P>
Kernel<W> pick_kernel_with(Isa isa, bool rows8) {
  constexpr Prefetch A = Prefetch::kAhead;
  if (isa < Isa::kAvx512)
    return {blocks_avx2<W, P>, 6, "avx2", blocks_avx2<W, P>, 6, 0, nullptr, nullptr, blocks_avx2<W, A>, nullptr};
  if (rows8)
    return {blocks_avx512<8, false, W, P>, 8, "avx512", blocks_avx512<8, false, W, P>, 8, 0,
            blocks_avx512<8, true, W, P>, blocks_avx512<8, true, W, P>, blocks_avx512<8, false, W, A>,
            blocks_avx512<8, true, W, A>};
  return {blocks_avx512<12, false, W, P>, 12, "avx512", blocks_avx512<8, false, W, P>, 8, 32,
          blocks_avx512<12, true, W, P>, blocks_avx512<8, true, W, P>, blocks_avx512<12, false, W, A>,
          blocks_avx512<12, true, W, A>};
}
#endif

template <typename W>
Kernel<W> pick_kernel() {
  const Isa isa = usable_isa();
#if defined(__x86_64__)
  if (isa >= Isa::kAvx2) {
    const bool rows8 = runtime::plan().fp32_block_rows == 8;
    return panel_prefetch() == Prefetch::kNextSlice ? pick_kernel_with<W, Prefetch::kNextSlice>(isa, rows8)
                                                    : pick_kernel_with<W, Prefetch::kAhead>(isa, rows8);
  }
#endif
  (void)isa;
  const auto fn = over_blocks<float, W, block_portable<W>, 8>;
  return {fn, 8, "portable", fn, 8, 0};
}

template <typename W = float>
const Kernel<W>& kernel() {
  static const Kernel<W> k = pick_kernel<W>();
  return k;
}

// y = act(x · Wᵀ + bias) by kern over w's panels: `steps` k steps (fp32: k; bf16: pairs of k),
// sliced to at most max_depth a pass; x (M rows, row stride ldx) as the kernel reads it.
template <typename W, typename Weight>
void packed_linear_steps(const Kernel<W>& kern, float* y, size_t ldy, const float* x, size_t ldx, const Weight& w,
                         size_t steps, size_t max_depth, const float* bias, size_t M, Activation act,
                         const RowsDone* rows_done, const TilesDone* tiles_done) {
  const size_t N = w.n();
  if (M == 0 || N == 0) return;
  const bool small = M <= kern.small_max_rows, many = !small && M > kChunkBlocks * kern.rows;
  const BlockFn<float, W> fn = small ? kern.small_fn : many ? kern.many_fn : kern.fn;
  const BlockFn<float, W> gelu_fn =
      act == Activation::kGelu ? (small ? kern.small_gelu_fn : many ? kern.many_gelu_fn : kern.gelu_fn) : nullptr;
  for_each_block(
      M, N, steps, depth_slice(steps, max_depth), small ? kern.small_rows : kern.rows,
      [&](size_t r, size_t rows, size_t p, size_t k0, size_t k1) {
        const size_t col = p * kPanelColumns;
        const BlockFn<float, W> f = gelu_fn && k1 == steps ? gelu_fn : fn;
        f(x + r * ldx, ldx, rows, w.panel(p), k0, k1, bias && k1 == steps ? bias + col : nullptr, k0 == 0,
          y + r * ldy + col, ldy, std::min(kPanelColumns, N - col));
      },
      [&](size_t m0, size_t m1, size_t c0, size_t c1) {
        if (act != Activation::kLinear && !gelu_fn) activation_rows(y + m0 * ldy + c0, ldy, m1 - m0, c1 - c0, act);
        if (tiles_done) (*tiles_done)(m0, m1, c0, c1);
      },
      kPanelColumns, rows_done);
}

}  // namespace

const char* packed_gemm_isa() { return kernel().isa; }

const char* packed_gemm_prefetch() {
#if defined(__x86_64__)
  if (usable_isa() >= Isa::kAvx2) return panel_prefetch() == Prefetch::kNextSlice ? "next" : "ahead";
#endif
  return "none";
}

size_t packed_gemm_block_rows() { return kernel().rows; }

void packed_linear(float* y, size_t ldy, const float* x, const PackedWeight& w, const float* bias, size_t M,
                   Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  packed_linear_steps(kernel(), y, ldy, x, w.k(), w, w.k(), kMaxDepth, bias, M, act, rows_done, tiles_done);
}

}  // namespace roberta::kernels

// ---------------------------------------------------------------- bfloat16

namespace roberta::kernels {

uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

namespace {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
// to_bf16's integer rounding, 16 values at a time (not vcvtneps2bf16, which flushes denormals).
__attribute__((target("avx512f"))) void to_bf16_row_avx512(const float* x, size_t n, uint16_t* out) {
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
  const __m512i half = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x40);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i bits = _mm512_loadu_si512(x + i), high = _mm512_srli_epi32(bits, 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, magnitude), inf);
    const __m512i rounded =
        _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(half, _mm512_and_si512(high, one))), 16);
    const __m512i h = _mm512_mask_blend_epi32(nan, rounded, _mm512_or_si512(high, quiet));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi32_epi16(h));
  }
  for (; i < n; ++i) out[i] = to_bf16(x[i]);
}
#endif

#if defined(__x86_64__)
// to_bf16 of the 8 floats at x, each in the low half of its 32-bit lane (the magnitude compared as
// a signed integer: both sides are >= 0).
__attribute__((target("avx2"), always_inline)) inline __m256i to_bf16_avx2(const float* x) {
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)), high = _mm256_srli_epi32(bits, 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF)),
                                         _mm256_set1_epi32(0x7F800000));
  const __m256i round = _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), _mm256_and_si256(high, _mm256_set1_epi32(1)));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, round), 16);
  return _mm256_blendv_epi8(rounded, _mm256_or_si256(high, _mm256_set1_epi32(0x40)), nan);
}

// to_bf16_row's values 8 at a time.
__attribute__((target("avx2"))) void to_bf16_row_avx2(const float* x, size_t n, uint16_t* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    // (each 32-bit lane holds a value below 2^16: packus keeps it; the permute joins the two halves)
    const __m256i h = to_bf16_avx2(x + i), packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(h, h), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_castsi256_si128(packed));
  }
  for (; i < n; ++i) out[i] = to_bf16(x[i]);
}

// n floats rounded as to_bf16 and widened back to fp32, 8 at a time.
__attribute__((target("avx2"))) void round_bf16_widened_avx2(const float* x, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_slli_epi32(to_bf16_avx2(x + i), 16));
  for (; i < n; ++i) out[i] = widen_bf16(to_bf16(x[i]));
}

// n bf16 values widened to fp32, 8 at a time.
__attribute__((target("avx2"))) void widen_bf16_avx2(const uint16_t* h, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_slli_epi32(v, 16));
  }
  for (; i < n; ++i) out[i] = widen_bf16(h[i]);
}
#endif

// bf16 pairs (rows, q) with row stride ldp widened to fp32: out (rows, 2q), row stride 2q.
void widen_bf16_rows(const uint32_t* pairs, size_t ldp, size_t rows, size_t q, float* out) {
  for (size_t m = 0; m < rows; ++m) {
    const auto* h = reinterpret_cast<const uint16_t*>(pairs + m * ldp);
#if defined(__x86_64__)
    static const bool avx2 = usable_isa() >= Isa::kAvx2;
    if (avx2) {
      widen_bf16_avx2(h, 2 * q, out + m * 2 * q);
      continue;
    }
#endif
    for (size_t i = 0; i < 2 * q; ++i) out[m * 2 * q + i] = widen_bf16(h[i]);
  }
}

// x (rows, k), row stride ldx, rounded as to_bf16 and widened back to fp32: out (rows, 2q), row
// stride 2q, q = (k + 1) / 2 (an odd k padded with a zero): the values widen_bf16_rows gives from
// to_bf16_pairs's pairs, in one pass.
void round_bf16_widened_rows(const float* x, size_t ldx, size_t rows, size_t k, float* out) {
  const size_t ldo = (k + 1) / 2 * 2;
  for (size_t m = 0; m < rows; ++m) {
    const float* src = x + m * ldx;
    float* dst = out + m * ldo;
#if defined(__x86_64__)
    static const bool avx2 = usable_isa() >= Isa::kAvx2;
    if (avx2)
      round_bf16_widened_avx2(src, k, dst);
    else
#endif
      for (size_t i = 0; i < k; ++i) dst[i] = widen_bf16(to_bf16(src[i]));
    if (k % 2) dst[k] = 0.0f;
  }
}
}  // namespace

void to_bf16_row(const float* x, size_t n, uint16_t* out) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
  static const bool avx512 = usable_isa() >= Isa::kAvx512;
  if (avx512) return to_bf16_row_avx512(x, n, out);
#endif
#if defined(__x86_64__)
  static const bool avx2 = usable_isa() >= Isa::kAvx2;
  if (avx2) return to_bf16_row_avx2(x, n, out);
#endif
  for (size_t i = 0; i < n; ++i) out[i] = to_bf16(x[i]);
}

PackedWeightBf16::PackedWeightBf16(const float* w, size_t n, size_t k)
    : n_(n), k_(k), data_(static_cast<uint16_t*>(::operator new[](bytes(), std::align_val_t(64)))) {
  ThreadPool::global()->parallel_for(panels(), [&](size_t p) {
    uint32_t* dst = reinterpret_cast<uint32_t*>(data_.get() + p * k_pairs() * kPanel * 2);
    std::memset(dst, 0, k_pairs() * kPanel * sizeof(uint32_t));
    std::vector<uint16_t> row(k_pairs() * 2, 0);  // k padded with a zero to an even count
    for (size_t j = 0; j < kPanel && p * kPanel + j < n; ++j) {
      to_bf16_row(w + (p * kPanel + j) * k, k, row.data());
      for (size_t q = 0; q < k_pairs(); ++q) std::memcpy(dst + q * kPanel + j, row.data() + 2 * q, 4);
    }
  });
}

namespace {

// x (rows, k), row stride ldx -> bf16 pairs (rows, (k + 1) / 2), row stride ldp, each row by
// to_bf16_row; k padded with a zero to an even count.
void to_bf16_pairs_by_rows(const float* x, size_t ldx, size_t rows, size_t k, uint32_t* out, size_t ldp) {
  for (size_t m = 0; m < rows; ++m) {
    auto* dst = reinterpret_cast<uint16_t*>(out + m * ldp);
    to_bf16_row(x + m * ldx, k, dst);
    if (k % 2) dst[k] = 0;
  }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
#define ROBERTA_HAVE_BF16_KERNEL 1
// Register block `block` of the chunk's `blocks`, for its PanelPrefetch.
template <size_t MR, Prefetch P>
__attribute__((target("avx512f,avx512bf16"))) void bf16_block_avx512(const uint32_t* xb, size_t ldx_pairs, size_t rows,
                                                                     const uint16_t* panel, size_t q0, size_t q1,
                                                                     const float* bias, bool first, float* y,
                                                                     size_t ldy, size_t cols, size_t block,
                                                                     size_t blocks) {
  __m512 c0[MR], c1[MR];
  load_block<MR>(c0, c1, rows, first, y, ldy, cols);
  PanelPrefetch<P> prefetch(panel, q0, q1, block, blocks);
  if (rows == MR) {
    const uint32_t* a = xb + q0;
    for (size_t q = q0; q < q1; ++q, ++a) {
      const uint16_t* b = panel + q * 64;
      prefetch.step(b);
      const __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 32);
#pragma GCC unroll 16
      for (size_t r = 0; r < MR; ++r) {
        const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[r * ldx_pairs]));
        c0[r] = _mm512_dpbf16_ps(c0[r], av, b0);
        c1[r] = _mm512_dpbf16_ps(c1[r], av, b1);
      }
    }
  } else {
    for (size_t q = q0; q < q1; ++q) {
      prefetch.step(panel + q * 64);
      const __m512bh b0 = (__m512bh)_mm512_load_si512(panel + q * 64);
      const __m512bh b1 = (__m512bh)_mm512_load_si512(panel + q * 64 + 32);
      for (size_t r = 0; r < rows; ++r) {
        const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(xb[r * ldx_pairs + q]));
        c0[r] = _mm512_dpbf16_ps(c0[r], av, b0);
        c1[r] = _mm512_dpbf16_ps(c1[r], av, b1);
      }
    }
  }
  store_block<MR>(c0, c1, rows, bias, y, ldy, cols);
}

template <size_t MR, Prefetch P>
__attribute__((target("avx512f,avx512bf16"), flatten)) void bf16_blocks_avx512(const uint32_t* xb, size_t ldx_pairs,
                                                                              size_t rows, const uint16_t* panel,
                                                                              size_t q0, size_t q1, const float* bias,
                                                                              bool first, float* y, size_t ldy,
                                                                              size_t cols) {
  if constexpr (P == Prefetch::kNextSlice)
    if (rows <= MR)  // one block: as blocks_avx512
      return bf16_blocks_avx512<MR, Prefetch::kAhead>(xb, ldx_pairs, rows, panel, q0, q1, bias, first, y, ldy, cols);
  const size_t blocks = (rows + MR - 1) / MR;
  for (size_t r = 0; r < rows; r += MR)
    bf16_block_avx512<MR, P>(xb + r * ldx_pairs, ldx_pairs, std::min(MR, rows - r), panel, q0, q1, bias, first,
                             y + r * ldy, ldy, cols, r / MR, blocks);
}

// vcvtneps2bf16 rounds to nearest even as to_bf16 does (NaN stays NaN; denormals become zero).
__attribute__((target("avx512f,avx512bf16"))) void to_bf16_pairs_avx512(const float* x, size_t ldx, size_t rows,
                                                                        size_t k, uint32_t* out, size_t ldp) {
  for (size_t m = 0; m < rows; ++m) {
    const float* src = x + m * ldx;
    uint16_t* dst = reinterpret_cast<uint16_t*>(out + m * ldp);
    size_t i = 0;
    for (; i + 16 <= k; i += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + i)));
    for (; i < k; ++i) dst[i] = to_bf16(src[i]);
    if (k % 2) dst[k] = 0;
  }
}
#endif

// fn or amx, or neither: the product on widened values by the fp32 kernels (kernel<uint16_t>()).
struct Bf16Kernel {
  BlockFn<uint32_t, uint16_t> fn;  // vdpbf16ps (null elsewhere)
  AmxBf16Fn amx;                    // our AMX product (null elsewhere): it applies GELU in its epilogue
  void (*convert)(const float* x, size_t ldx, size_t rows, size_t k, uint32_t* out, size_t ldp);
  // for_each_block's row blocks: the register block (AVX512-BF16), an A tile (AMX); 0 where the
  // product widens (kernel<uint16_t>() has its own)
  size_t block_rows;
  const char* name;
  BlockFn<uint32_t, uint16_t> many_fn = nullptr;  // fn for products of more than one row chunk (Kernel::many_fn)
};

Bf16Kernel pick_bf16_kernel() {
#if defined(ROBERTA_HAVE_BF16_KERNEL)
  if (usable_isa() >= Isa::kAmx)
    return {nullptr, bf16_block_amx, to_bf16_pairs_avx512, kAmxBlockRows, "AMX-BF16"};
  if (usable_isa() >= Isa::kAvx512Bf16)
    return {panel_prefetch() == Prefetch::kNextSlice ? bf16_blocks_avx512<kMaxRows, Prefetch::kNextSlice>
                                                     : bf16_blocks_avx512<kMaxRows, Prefetch::kAhead>,
            nullptr, to_bf16_pairs_avx512, kMaxRows, "AVX512-BF16", bf16_blocks_avx512<kMaxRows, Prefetch::kAhead>};
#endif
  static const std::string name = std::string("widened to fp32, ") + kernel<uint16_t>().isa;
  return {nullptr, nullptr, to_bf16_pairs_by_rows, 0, name.c_str()};
}

const Bf16Kernel& bf16_kernel() {
  static const Bf16Kernel k = pick_bf16_kernel();
  return k;
}

}  // namespace

const char* bf16_kernel_name() { return bf16_kernel().name; }

bool has_bf16_instructions() {
#if defined(ROBERTA_HAVE_BF16_KERNEL)
  return usable_isa() >= Isa::kAvx512Bf16;
#else
  return false;
#endif
}

bool bf16_product_widens() { return !bf16_kernel().fn && !bf16_kernel().amx; }

void to_bf16_pairs(const float* x, size_t rows, size_t k, uint32_t* pairs) {
  bf16_kernel().convert(x, k, rows, k, pairs, (k + 1) / 2);
}

void to_bf16_pairs(const float* x, size_t ldx, size_t rows, size_t k, uint32_t* pairs, size_t ldp) {
  bf16_kernel().convert(x, ldx, rows, k, pairs, ldp);
}

namespace {
// Without bf16 instructions: x rounded to bf16 and widened to fp32, rows of 2 * w.k_pairs() floats,
// by widen(m0, rows, out) on the pool (64 rows a task), then the product on the fp32 kernels.
void widened_product(const std::function<void(size_t m0, size_t rows, float* out)>& widen, float* y, size_t ldy,
                     const PackedWeightBf16& w, const float* bias, size_t M, Activation act,
                     const RowsDone* rows_done, const TilesDone* tiles_done) {
  const size_t Q = w.k_pairs();
  thread_local std::vector<float> wide_buffer;  // the caller's; the pool's threads see it through xw
  const util::Scratch<float> wide(wide_buffer, M * 2 * Q);
  float* xw = wide.data();
  constexpr size_t kRows = 64;
  ThreadPool::global()->parallel_for((M + kRows - 1) / kRows, [&](size_t t) {
    const size_t m0 = t * kRows;
    widen(m0, std::min(kRows, M - m0), xw + m0 * 2 * Q);
  });
  packed_linear_steps(kernel<uint16_t>(), y, ldy, xw, 2 * Q, w, Q, kMaxDepth / 2, bias, M, act, rows_done,
                      tiles_done);
}

// The product from x already rounded: pairs (M, w.k_pairs()), by kern.fn or kern.amx (the AMX
// product applies GELU itself, on the last k slice), or widened.
void packed_linear_with(const Bf16Kernel& kern, float* y, size_t ldy, const uint32_t* xp, const PackedWeightBf16& w,
                        const float* bias, size_t M, Activation act, const RowsDone* rows_done,
                        const TilesDone* tiles_done) {
  const size_t N = w.n(), Q = w.k_pairs();
  if (M == 0 || N == 0) return;
  if (!kern.fn && !kern.amx)
    return widened_product([&](size_t m0, size_t rows, float* out) { widen_bf16_rows(xp + m0 * Q, Q, rows, Q, out); },
                           y, ldy, w, bias, M, act, rows_done, tiles_done);
  const bool fused_gelu = kern.amx && act == Activation::kGelu;
  // The AMX product takes all of k in one pass: its sums stay in the tiles, and y is written once,
  // where k slices of 512 pairs make the 3072-deep product add y's earlier slices back from memory
  // (docs/performance.md#figures-behind-the-code). (Slicing k inside the AMX kernel, the sums kept
  // in the tiles' own layout between slices so that a slice of the panel stays in L1 for all of a
  // chunk's blocks, speeds up a stand-alone loop of the blocking with the weights in L2, but not a
  // forward pass, whose weights come from memory.)
  for_each_block(
      M, N, Q, kern.amx ? Q : depth_slice(Q, kMaxDepth / 2), kern.block_rows,
      [&](size_t r, size_t rows, size_t p, size_t q0, size_t q1) {
        const size_t col = p * PackedWeightBf16::kPanel, cols = std::min(PackedWeightBf16::kPanel, N - col);
        const float* b = bias && q1 == Q ? bias + col : nullptr;
        if (kern.amx)
          kern.amx(xp + r * Q, Q, rows, w.panel(p), q0, q1, b, q0 == 0, y + r * ldy + col, ldy, cols,
                   fused_gelu && q1 == Q, nullptr, p + 1 < w.panels() ? w.panel(p + 1) : nullptr);
        else
          (kern.many_fn && M > kChunkBlocks * kern.block_rows ? kern.many_fn : kern.fn)(
              xp + r * Q, Q, rows, w.panel(p), q0, q1, b, q0 == 0, y + r * ldy + col, ldy, cols);
      },
      [&](size_t m0, size_t m1, size_t c0, size_t c1) {
        if (act != Activation::kLinear && !fused_gelu) activation_rows(y + m0 * ldy + c0, ldy, m1 - m0, c1 - c0, act);
        if (tiles_done) (*tiles_done)(m0, m1, c0, c1);
      },
      kPanelColumns, rows_done);
}

// The same from fp32 x, rounded to bf16 once per call (rows split over the pool when there are many).
void packed_linear_with(const Bf16Kernel& kern, float* y, size_t ldy, const float* x, const PackedWeightBf16& w,
                        const float* bias, size_t M, Activation act, const RowsDone* rows_done,
                        const TilesDone* tiles_done) {
  const size_t K = w.k(), N = w.n(), Q = w.k_pairs();
  if (M == 0 || N == 0) return;
  if (!kern.fn && !kern.amx)  // rounded and widened in one pass
    return widened_product(
        [&](size_t m0, size_t rows, float* out) { round_bf16_widened_rows(x + m0 * K, K, rows, K, out); }, y, ldy, w,
        bias, M, act, rows_done, tiles_done);
  constexpr size_t kConvertRows = 64;
  thread_local std::vector<uint32_t> xb_buffer;  // the caller's; the pool's threads see it through xp
  const util::Scratch<uint32_t> xb(xb_buffer, M * Q);
  uint32_t* xp = xb.data();
  ThreadPool::global()->parallel_for((M + kConvertRows - 1) / kConvertRows, [&](size_t t) {
    const size_t m0 = t * kConvertRows, rows = std::min(kConvertRows, M - m0);
    to_bf16_pairs(x + m0 * K, rows, K, xp + m0 * Q);
  });
  packed_linear_with(kern, y, ldy, xp, w, bias, M, act, rows_done, tiles_done);
}
}  // namespace

void packed_linear(float* y, size_t ldy, const float* x, const PackedWeightBf16& w, const float* bias, size_t M,
                   Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  packed_linear_with(bf16_kernel(), y, ldy, x, w, bias, M, act, rows_done, tiles_done);
}

void packed_linear(float* y, size_t ldy, const Bf16Rows& x, const PackedWeightBf16& w, const float* bias, size_t M,
                   Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  packed_linear_with(bf16_kernel(), y, ldy, x.pairs, w, bias, M, act, rows_done, tiles_done);
}

namespace {
// Whether the bf16 output of packed_linear_to_bf16 can be had for this shape and activation.
bool bf16_output_shape(const PackedWeightBf16& w, Activation act) {
  return w.n() % 2 == 0 && w.k_pairs() <= kMaxDepth / 2 && (act == Activation::kLinear || act == Activation::kGelu);
}

// The product written as bf16 by an AMX kernel's epilogue (see packed_linear_to_bf16).
void packed_linear_to_bf16_with(AmxBf16Fn amx, uint32_t* out, size_t ldp, const Bf16Rows& x,
                                const PackedWeightBf16& w, const float* bias, size_t M, Activation act,
                                const ColumnGroups& groups) {
  const size_t N = w.n(), Q = w.k_pairs();
  if (M == 0 || N == 0) return;
  for_each_block(
      M, N, Q, Q, kAmxBlockRows,
      [&](size_t r, size_t rows, size_t p, size_t, size_t) {
        const size_t col = p * PackedWeightBf16::kPanel;  // (a panel lies within a group)
        amx(x.pairs + r * Q, Q, rows, w.panel(p), 0, Q, bias ? bias + col : nullptr, true, nullptr, 2 * ldp,
            std::min(PackedWeightBf16::kPanel, N - col), act == Activation::kGelu,
            reinterpret_cast<uint16_t*>(out + group_offset(groups, ldp, r, col)),
            p + 1 < w.panels() ? w.panel(p + 1) : nullptr);
      },
      [](size_t, size_t, size_t, size_t) {}, kPanelColumns);
}
}  // namespace

bool writes_bf16_output(const PackedWeightBf16& w, Activation act) {
  return bf16_kernel().amx && has_bf16_instructions() && bf16_output_shape(w, act);
}

void check_column_groups(const ColumnGroups& g, size_t n, const char* who) {
  if (g.width && (g.width % 64 != 0 || n % g.width != 0))
    throw Error(std::string(who) + ": column groups of " + std::to_string(g.width) +
                " are not a multiple of 64 that divides the " + std::to_string(n) + " columns");
}

void packed_linear_to_bf16(uint32_t* out, size_t ldp, const Bf16Rows& x, const PackedWeightBf16& w, const float* bias,
                           size_t M, Activation act, const ColumnGroups& groups) {
  if (!writes_bf16_output(w, act))
    throw Error("packed_linear_to_bf16: this product cannot write bf16 here (see writes_bf16_output)");
  check_column_groups(groups, w.n(), "packed_linear_to_bf16");
  packed_linear_to_bf16_with(bf16_kernel().amx, out, ldp, x, w, bias, M, act, groups);
}

void packed_linear_to_bf16_amx_emulated(uint32_t* out, size_t ldp, const Bf16Rows& x, const PackedWeightBf16& w,
                                        const float* bias, size_t M, Activation act, const ColumnGroups& groups) {
  if (!has_bf16_instructions() || !bf16_output_shape(w, act))
    throw Error("packed_linear_to_bf16_amx_emulated: needs AVX512-BF16 and a product writes_bf16_output allows");
  check_column_groups(groups, w.n(), "packed_linear_to_bf16_amx_emulated");
  packed_linear_to_bf16_with(bf16_block_amx_emulated, out, ldp, x, w, bias, M, act, groups);
}

void packed_linear_amx_emulated(float* y, size_t ldy, const float* x, const PackedWeightBf16& w, const float* bias,
                                size_t M, Activation act) {
  const Bf16Kernel emulated{nullptr, bf16_block_amx_emulated, nullptr, kAmxBlockRows, "AMX-BF16, emulated"};
  packed_linear_with(emulated, y, ldy, x, w, bias, M, act, nullptr, nullptr);
}

}  // namespace roberta::kernels
