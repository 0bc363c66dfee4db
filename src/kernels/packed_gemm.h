#pragma once
// A GEMM for the engine's one shape of product, y (M, N) = x (M, K) · Wᵀ + bias, with the weight
// W (N, K) repacked once at load time into panels of 32 output columns:
//   panel p holds W[p*32 + j][k] at [p][k][j], zero-padded past N.
// The inner kernel keeps a block of y in registers (AVX-512: 12 x 32 or 8 x 32 for fp32 by CPU
// model, 8 x 32 for products of at most 32 rows; 12 x 32 for bf16 with AVX512-BF16, and without it the
// fp32 kernel's blocks on the bf16 values widened; AVX2 and portable fallbacks picked at run time;
// on 64-bit ARM NEON blocks of 6 x 32 and bfmmla's of 4 x 32, docs/arm64.md)
// and reads the panel straight through, prefetching ahead, so neither operand is copied per call.
// The bias is added after the products (as PyTorch's addmm rounds) and the activation once a tile
// is complete, while it is in cache (GELU by the AVX-512 fp32 kernel's store itself, on values
// still in registers).
// Panels are split over the thread pool in contiguous ranges.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "activation.h"
#include "amx_gemm.h"
#include "rows_done.h"

namespace roberta::kernels {

class PackedWeight {
 public:
  static constexpr size_t kPanel = 32;

  PackedWeight() = default;
  // w is (n, k) row-major.
  PackedWeight(const float* w, size_t n, size_t k);

  size_t n() const { return n_; }
  size_t k() const { return k_; }
  const float* panel(size_t p) const { return data_.get() + p * k_ * kPanel; }
  size_t panels() const { return (n_ + kPanel - 1) / kPanel; }
  size_t bytes() const { return panels() * k_ * kPanel * sizeof(float); }

 private:
  struct Free {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  size_t n_ = 0, k_ = 0;
  std::unique_ptr<float[], Free> data_;  // 64-byte aligned: one panel row is one cache line
};

// The same weight in bfloat16 (round to nearest even), laid out for AVX512-BF16's vdpbf16ps:
// panel p, k-pair q holds (W[p*32 + j][2q], W[p*32 + j][2q + 1]) at [p][q][j][0..1]; k is padded
// to an even count with zeros. Products accumulate in fp32.
class PackedWeightBf16 {
 public:
  static constexpr size_t kPanel = 32;

  PackedWeightBf16() = default;
  PackedWeightBf16(const float* w, size_t n, size_t k);

  size_t n() const { return n_; }
  size_t k() const { return k_; }
  size_t k_pairs() const { return (k_ + 1) / 2; }
  const uint16_t* panel(size_t p) const { return data_.get() + p * k_pairs() * kPanel * 2; }
  size_t panels() const { return (n_ + kPanel - 1) / kPanel; }
  size_t bytes() const { return panels() * k_pairs() * kPanel * 2 * sizeof(uint16_t); }

 private:
  struct Free {
    void operator()(uint16_t* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  size_t n_ = 0, k_ = 0;
  std::unique_ptr<uint16_t[], Free> data_;
};

// fp32 -> bfloat16 with round to nearest even (NaN stays NaN), as torch and OpenBLAS convert.
uint16_t to_bf16(float f);
// n values rounded exactly as to_bf16 does (denormals kept, NaN quieted), vectorised where the CPU
// allows: for packing weights, and in to_bf16_pairs where the CPU has no bf16 instructions.
void to_bf16_row(const float* x, size_t n, uint16_t* out);
// x (rows, k) rounded as to_bf16 does, into pairs (rows, (k + 1) / 2): the element 2i in the low
// half of pair i, k padded with a zero to an even count. Vectorised where the CPU allows.
void to_bf16_pairs(const float* x, size_t rows, size_t k, uint32_t* pairs);
// The same on a block of a larger matrix: x with row stride ldx, pairs with row stride ldp (in
// pairs); e.g. a tile of columns [c0, c0 + k) (c0 even) into pairs + c0 / 2.
void to_bf16_pairs(const float* x, size_t ldx, size_t rows, size_t k, uint32_t* pairs, size_t ldp);

// x already rounded to bf16 by to_bf16_pairs, e.g. by the op before while its rows were in cache
// (a RowsDone or TilesDone), so that the product needs no pass of its own: pairs (M, (K + 1) / 2).
// (Where the product widens, bf16_product_widens, it still widens the pairs in a pass: give it fp32.)
struct Bf16Rows {
  const uint32_t* pairs;
};

// y (M, N) with row stride ldy = act(x (M, K) · Wᵀ (+ bias[N] when bias is not null)); the
// activation is applied to each tile while it is still in cache. tiles_done (may be null) is then
// called on each finished tile, in the task that computed it. rows_done (may be null) is called
// on every row of y once it is final: by the tasks that computed whole rows, where there are enough
// rows for each thread to take whole rows (for_each_block), else after the product.
void packed_linear(float* y, size_t ldy, const float* x, const PackedWeight& w, const float* bias, size_t M,
                   Activation act = Activation::kLinear, const RowsDone* rows_done = nullptr,
                   const TilesDone* tiles_done = nullptr);
// The same with bf16 weights: x is rounded to bf16, products are summed in fp32.
void packed_linear(float* y, size_t ldy, const float* x, const PackedWeightBf16& w, const float* bias, size_t M,
                   Activation act = Activation::kLinear, const RowsDone* rows_done = nullptr,
                   const TilesDone* tiles_done = nullptr);
// The same from x already rounded (the same results, bit for bit).
void packed_linear(float* y, size_t ldy, const Bf16Rows& x, const PackedWeightBf16& w, const float* bias, size_t M,
                   Activation act = Activation::kLinear, const RowsDone* rows_done = nullptr,
                   const TilesDone* tiles_done = nullptr);

// Whether packed_linear_to_bf16 runs here for w and act: our bf16 product on AMX tiles (with
// AVX512-BF16 for the rounding), N even, K in one pass (k_pairs <= 512), act linear or GELU.
bool writes_bf16_output(const PackedWeightBf16& w, Activation act);
// out (M, w.n()) as bf16 pairs, row stride ldp pairs, = act(x · Wᵀ + bias) rounded to bf16, the
// same values bit for bit as packed_linear followed by to_bf16_pairs, but rounded by the product's
// epilogue: fp32 y is never written (for a product whose only reader takes bf16, as the output
// product reads act(intermediate)). Throws roberta::Error where !writes_bf16_output(w, act).
void packed_linear_to_bf16(uint32_t* out, size_t ldp, const Bf16Rows& x, const PackedWeightBf16& w, const float* bias,
                           size_t M, Activation act, const ColumnGroups& groups = {});
// For tests: the AMX product's loop (the same shapes and activations) with `block` for its tile
// blocks, e.g. the blocks on emulated tiles the tests build (tests/amx_emulation.cpp), on any CPU with
// AVX512-BF16; the first from x rounded to bf16 by this CPU's conversion.
void packed_linear_amx_with(AmxBf16Fn block, float* y, size_t ldy, const float* x, const PackedWeightBf16& w,
                            const float* bias, size_t M, Activation act = Activation::kLinear);
void packed_linear_to_bf16_amx_with(AmxBf16Fn block, uint32_t* out, size_t ldp, const Bf16Rows& x,
                                    const PackedWeightBf16& w, const float* bias, size_t M, Activation act,
                                    const ColumnGroups& groups = {});

// Whether the bf16 product runs on AVX512-BF16 or AMX here (the CPU has it and ROBERTA_ISA allows
// it); else on ARM's BF16 (bfmmla, bf16_kernel_name() "NEON-BF16") or the fp32 kernels run it on the
// bf16 values widened to fp32 (at about fp32's speed with AVX-512, AVX2 or NEON; slowly on the
// portable loop).
bool has_bf16_instructions();
// What runs our bf16 product here: "AMX-BF16", "AVX512-BF16", "NEON-BF16" (64-bit ARM with BF16),
// or "widened to fp32, " and the fp32 kernel's instruction set ("avx512", "avx2", "neon", "portable").
const char* bf16_kernel_name();
// Whether our bf16 product runs on the fp32 kernels here (no bf16 instructions): it then takes x in
// fp32 best, rounding and widening it in one pass (from Bf16Rows it widens the pairs).
bool bf16_product_widens();

// The instruction set the kernel runs with here: "avx512", "avx2", "neon" (64-bit ARM) or "portable".
const char* packed_gemm_isa();
// The rows of its register blocks in products of more than 32 rows: 12 or 8 with AVX-512 by CPU
// model (runtime/cpu.h), 6 with AVX2 and NEON, 8 portable (the same for bf16 where it widens).
// ROBERTA_FP32_ROWS=8|12 overrides it for AVX-512 (runtime/settings.h), e.g. to test or time the
// other choice on one machine.
size_t packed_gemm_block_rows();
// How the fp32 and bf16 register blocks prefetch their panels from memory (AVX-512 and AVX2): "next"
// (each chunk's blocks together ask for the panel's next k slice while they compute, spread evenly
// over them), "ahead" (each block asks for the rows a fixed distance ahead); by CPU model
// (runtime/cpu.h); "none" for the portable loop.
// ROBERTA_PREFETCH=next|ahead overrides it (runtime/settings.h). The same choice decides whether
// the int8 kernels below AMX ask for their panels' next k slice (int8_kernel_prefetches(),
// packed_gemm_int8.h; panel_prefetch.h).
const char* packed_gemm_prefetch();

}  // namespace roberta::kernels
