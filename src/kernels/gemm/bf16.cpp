// The bf16 packed GEMM (kernels/packed_gemm.h): which kernel runs it here (AMX, AVX512-BF16, ARM's
// BF16, or the fp32 kernels on widened values), the entry points, and the products that write bf16.
#include "kernels/packed_gemm.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "kernels/gemm/bf16_avx512.h"
#include "kernels/gemm/bf16_convert.h"
#include "kernels/gemm/built.h"
#include "kernels/gemm/fp32_blocks.h"
#include "kernels/amx_gemm.h"
#include "kernels/isa.h"
#include "roberta/error.h"
#include "util/scratch.h"
#include "util/thread_pool.h"

namespace roberta::kernels {
using namespace gemm_impl;

namespace {

// fn or amx, or neither: the product on widened values by the fp32 kernels (kernel<uint16_t>()).
struct Bf16Kernel {
  BlockFn<uint32_t, uint16_t> fn;  // vdpbf16ps or bfmmla (null elsewhere)
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
    return {bf16_blocks_avx512_fn(panel_prefetch()), nullptr, to_bf16_pairs_avx512, kMaxRows, "AVX512-BF16",
            bf16_blocks_avx512_fn(Prefetch::kAhead)};
#endif
#if defined(__aarch64__)
  if (usable_isa() >= Isa::kArmBf16)
    return {bf16_blocks_neon(), nullptr, to_bf16_pairs_by_rows, bf16_neon_block_rows(), "NEON-BF16"};
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

void packed_linear_to_bf16_amx_with(AmxBf16Fn block, uint32_t* out, size_t ldp, const Bf16Rows& x,
                                    const PackedWeightBf16& w, const float* bias, size_t M, Activation act,
                                    const ColumnGroups& groups) {
  if (!has_bf16_instructions() || !bf16_output_shape(w, act))
    throw Error("packed_linear_to_bf16_amx_with: needs AVX512-BF16 and a product writes_bf16_output allows");
  check_column_groups(groups, w.n(), "packed_linear_to_bf16_amx_with");
  packed_linear_to_bf16_with(block, out, ldp, x, w, bias, M, act, groups);
}

void packed_linear_amx_with(AmxBf16Fn block, float* y, size_t ldy, const float* x, const PackedWeightBf16& w,
                            const float* bias, size_t M, Activation act) {
  const Bf16Kernel given{nullptr, block, nullptr, kAmxBlockRows, "AMX-BF16, a given block"};
  packed_linear_with(given, y, ldy, x, w, bias, M, act, nullptr, nullptr);
}

}  // namespace roberta::kernels
