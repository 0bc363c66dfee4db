#pragma once
// Dynamic int8 quantization for the packed GEMM, y (M, N) = x (M, K) · Wᵀ + bias:
// - the weight is quantized once at load, per output channel and symmetric:
//     scale[n] = max_k |W[n][k]| / 127,  q[n][k] = round(W[n][k] / scale[n]) in [-127, 127];
// - x is quantized per call, per row (token) and symmetric the same way, then offset by 128 to
//   the unsigned bytes that VNNI's vpdpbusd multiplies with signed weight bytes;
// - products are summed in int32, the offset removed (128 · the column sums, precomputed per k
//   slice), and the epilogue dequantizes: y = x_scale[m] · scale[n] · sum + bias[n].
// Layout for vpdpbusd: panel p, k-quad q holds (W[p*64 + j][4q .. 4q+3]) at [p][q][j][0..3]; k is
// padded with zeros to a multiple of 4. Panels are 64 columns wide (4 zmm), so that one broadcast
// of an input quad feeds 4 products. AMX-INT8 tiles, AVX512-VNNI, AVX-VNNI (the same vpdpbusd on
// 8-int registers), or (without VNNI) AVX-512BW or AVX2, whose vpmaddubsw takes x's signed q back
// from the unsigned byte (sums of q · w: no offset to remove), else portable code. On 64-bit ARM
// smmla or sdot on the same layout, also on the signed q (gemm/int8_neon.cpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "activation.h"
#include "amx_gemm.h"
#include "rows_done.h"

namespace roberta::kernels {

class PackedWeightInt8 {
 public:
  static constexpr size_t kPanel = 64;
  // k quads per pass: K <= 3072 in one slice (192 KB of a panel, from L2), so the int32 sums are
  // dequantized once (|sum| <= 255 * 127 * 3072 < 2^31); roberta-base's output product in four
  // passes of 192 quads is slower (docs/performance.md#figures-behind-the-code).
  static constexpr size_t kSliceQuads = 768;

  PackedWeightInt8() = default;
  PackedWeightInt8(const float* w, size_t n, size_t k);  // w is (n, k) row-major

  size_t n() const { return n_; }
  size_t k() const { return k_; }
  size_t k_quads() const { return (k_ + 3) / 4; }
  size_t panels() const { return (n_ + kPanel - 1) / kPanel; }
  const int8_t* panel(size_t p) const { return data_.get() + p * k_quads() * kPanel * 4; }
  const float* scales() const { return scales_.data(); }  // (n)
  // 128 · sum of the weight bytes of column j of panel p over k slice s: (slices, panels, 64).
  const int32_t* offsets(size_t slice, size_t p) const {
    return offsets_.data() + (slice * panels() + p) * kPanel;
  }
  size_t bytes() const {
    return panels() * k_quads() * kPanel * 4 + scales_.size() * sizeof(float) + offsets_.size() * sizeof(int32_t);
  }
  // The weight as the product sees it: q[n][k] · scale[n] (for tests).
  float dequantized(size_t n, size_t k) const;

 private:
  struct Free {
    void operator()(int8_t* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  size_t n_ = 0, k_ = 0;
  std::unique_ptr<int8_t[], Free> data_;
  std::vector<float> scales_;
  std::vector<int32_t> offsets_;
};

// One weight row (an output channel) quantized: q[i] = round(w[i] / scale) in [-127, 127] with
// scale = max |w| / 127 (1 for an all-zero row); returns the scale. A row holding an infinity or a
// NaN gets scale NaN and q all zero: its output channel is NaN, as fp32's is not finite there. Every
// int8 path (ours, oneDNN's) quantizes weights with this.
float quantize_weight_row(const float* w, size_t k, int8_t* q);

// x (rows, k) quantized per row: quads (rows, k_quads) of unsigned bytes q + 128, and scale[rows];
// as the weights, a row holding an infinity or a NaN gets scale NaN and zeros (bytes 128): its
// outputs are NaN.
void quantize_rows(const float* x, size_t rows, size_t k, uint32_t* quads, float* scale);

// y (M, N) with row stride ldy = act(dequantized product + bias), x quantized on the fly; rows_done
// and tiles_done as for packed_linear in packed_gemm.h.
void packed_linear(float* y, size_t ldy, const float* x, const PackedWeightInt8& w, const float* bias, size_t M,
                   Activation act = Activation::kLinear, const RowsDone* rows_done = nullptr,
                   const TilesDone* tiles_done = nullptr);

// x already quantized by quantize_rows, e.g. by the rows_done of the product before (the rows
// still in cache, and no pass of its own): quads (M, w.k_quads()) and scales (M).
struct QuantizedRows {
  const uint32_t* quads;
  const float* scales;
};
void packed_linear(float* y, size_t ldy, const QuantizedRows& x, const PackedWeightInt8& w, const float* bias,
                   size_t M, Activation act = Activation::kLinear, const RowsDone* rows_done = nullptr,
                   const TilesDone* tiles_done = nullptr);

// act(x · Wᵀ + bias) rounded to bf16 pairs (M, N / 2) with row stride ldp straight from our AMX
// product's epilogue (no fp32 y): the same values as packed_linear followed by to_bf16_pairs. The
// int8 encoder's intermediate product writes act(intermediate) so, for quantize_bf16_rows. Only
// where writes_bf16_output(w, act) (else a roberta::Error).
bool writes_bf16_output(const PackedWeightInt8& w, Activation act);
// With groups (ColumnGroups, rows_done.h): the columns in groups.
void packed_linear_to_bf16(uint32_t* out, size_t ldp, const QuantizedRows& x, const PackedWeightInt8& w,
                           const float* bias, size_t M, Activation act, const ColumnGroups& groups = {});
// Rows of bf16 pairs (rows, ceil(k / 2), row stride ldp) quantized as quantize_rows quantizes the
// same values widened to fp32: the same quads and scales.
void quantize_bf16_rows(const uint32_t* pairs, size_t ldp, size_t rows, size_t k, uint32_t* quads, float* scale);

// For tests: the AMX product's loop with `block` for its tile blocks (as packed_linear_amx_with of
// packed_gemm.h), on any CPU with AVX-512; the bf16 output also needs AVX512-BF16.
void packed_linear_amx_with(AmxInt8Fn block, float* y, size_t ldy, const QuantizedRows& x, const PackedWeightInt8& w,
                            const float* bias, size_t M, Activation act = Activation::kLinear);
void packed_linear_to_bf16_amx_with(AmxInt8Fn block, uint32_t* out, size_t ldp, const QuantizedRows& x,
                                    const PackedWeightInt8& w, const float* bias, size_t M, Activation act,
                                    const ColumnGroups& groups = {});

// Whether this CPU has AVX512-VNNI, ROBERTA_ISA allows it (avx512vnni and up) and this build has
// our VNNI kernel (GCC).
bool has_vnni_instructions();
// Whether this build has our AVX-512 int8 kernels (AMX-INT8, AVX512-VNNI, AVX512BW: GCC only).
bool avx512_int8_kernels_built();
// Whether this build has our AVX-VNNI kernel (GCC 11 or clang 12 and later), whatever the CPU.
bool avx_vnni_kernel_built();
// What runs our int8 product here: "AMX-INT8" (ROBERTA_ISA amx, the default where the CPU and
// Linux allow), "AVX512-VNNI", "AVX512BW" (AVX-512 without VNNI: vpmaddubsw), "AVX-VNNI" (on a CPU
// with AVX-VNNI: where ROBERTA_ISA is avxvnni, the CPU has no AVX-512, or the build lacks the
// GCC-only AVX-512 kernels), "AVX2" (vpmaddubsw), "NEON-I8MM" (64-bit ARM with I8MM: smmla),
// "NEON-SDOT" (with the dot product: sdot) or "portable".
const char* int8_kernel_name();
// Whether that kernel asks for its weights' next k slice while it computes (panel_prefetch.h): the
// kernels below AMX where packed_gemm_prefetch() is "next"; with "ahead" they leave it to the
// hardware prefetcher (AMX prefetches in its own way, the portable loop not at all).
bool int8_kernel_prefetches();
// Whether it applies GELU in its epilogue and can write bf16 (writes_bf16_output): on AMX tiles, and
// AVX512-VNNI's where the CPU has AVX512-BF16 and its model's row asks for it (runtime/cpu.h).
bool int8_kernel_fuses_epilogue();

}  // namespace roberta::kernels
