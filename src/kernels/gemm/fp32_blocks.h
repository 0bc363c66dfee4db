#pragma once
// Internals shared by the fp32 and bf16 packed GEMMs (kernels/packed_gemm.h): the register-block
// contract (BlockFn), the portable block, the Kernel a CPU gets, and the driver over the panels.
// The instruction-set blocks are in fp32_avx2.cpp, fp32_avx512.cpp and fp32_neon.cpp; the choice in
// fp32.cpp.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "kernels/activations.h"
#include "kernels/block_loop.h"
#include "kernels/packed_gemm.h"
#if defined(__x86_64__)
#include "kernels/panel_prefetch.h"
#endif

namespace roberta::kernels::gemm_impl {

constexpr size_t kMaxRows = 12;  // the most rows of y one register block holds
// k per pass over a panel: K in equal slices of at most kMaxDepth rows of the panel (fp32: k;
// bf16: pairs of k). Each pass starts the block's accumulators from y again, and y's rows are far
// apart (one line per row per panel), so they come back from L2; with short (256-row) slices that
// is a visible cost (docs/performance.md#figures-behind-the-code), while a longer slice of the
// panel (128 KB at 1024) still streams from L2 in time, prefetched.
constexpr size_t kMaxDepth = 1024;
inline size_t depth_slice(size_t k, size_t max_depth) {
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

#if defined(__x86_64__)
// The AVX2 blocks (6 x 32) and the AVX-512 blocks (12 x 32, or 8 x 32 where rows8), prefetching by
// `prefetch` in products of one row chunk (fp32_avx2.cpp, fp32_avx512.cpp).
template <typename W>
Kernel<W> avx2_kernel(Prefetch prefetch);
template <typename W>
Kernel<W> avx512_kernel(bool rows8, Prefetch prefetch);
#endif
#if defined(__aarch64__)
// The NEON blocks (6 x 32 as two passes of 16 columns; fp32_neon.cpp).
template <typename W>
Kernel<W> neon_kernel();
// The bf16 product's bfmmla blocks (bf16_neon.cpp), where the CPU has BF16; their rows.
BlockFn<uint32_t, uint16_t> bf16_blocks_neon();
size_t bf16_neon_block_rows();
#endif

// The kernel of this process's plan, chosen once (fp32.cpp). W = uint16_t: the bf16 product on
// widened values.
template <typename W = float>
const Kernel<W>& kernel();

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

}  // namespace roberta::kernels::gemm_impl
