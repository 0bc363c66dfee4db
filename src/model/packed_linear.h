#pragma once
// A linear layer whose weight is repacked once at load, in fp32, bf16 or int8, for our packed GEMM
// or for oneDNN's matmul (kernels::use_onednn decides; the bias stays fp32). Several layers with
// the same input (Q, K, V) can be joined into one product.
// (Int8: see kernels/packed_gemm_int8.h; oneDNN: kernels/onednn_gemm.h.)
//
//   PackedLinear qkv = PackedLinear::join({q, k, v}, WeightType::kF32);   // (3H, H)
//   qkv.apply(y, 3 * H, x, T);                                           // y (T, 3H) = x · Wᵀ + b
#include <cstddef>
#include <variant>
#include <vector>

#include "kernels/activation.h"
#include "kernels/packed_gemm.h"
#include "kernels/onednn_gemm.h"
#include "kernels/packed_gemm_int8.h"
#include "roberta/model.h"

namespace roberta {

// A torch.nn.Linear as stored in the checkpoint: weight (out, in), bias (out).
struct LinearWeights {
  const float* weight = nullptr;
  const float* bias = nullptr;
  size_t out = 0, in = 0;
};

class PackedLinear {
 public:
  PackedLinear() = default;
  // Packs one layer, or several with the same input size stacked along the output.
  static PackedLinear join(const std::vector<LinearWeights>& parts, WeightType type);

  // y (M, out) with row stride ldy = act(x (M, in) · Wᵀ + bias); then tiles_done (may be null) on
  // each finished tile of y and rows_done (may be null) on finished rows of y, inside the product's
  // tasks where it can (kernels::for_each_block).
  void apply(float* y, size_t ldy, const float* x, size_t M,
             kernels::Activation act = kernels::Activation::kLinear,
             const kernels::RowsDone* rows_done = nullptr, const kernels::TilesDone* tiles_done = nullptr) const;
  // Whether this layer can take its input already quantized (int8 weights, ours or oneDNN's).
  bool takes_quantized_input() const;
  // The same with x quantized by kernels::quantize_rows; only where takes_quantized_input().
  void apply(float* y, size_t ldy, const kernels::QuantizedRows& x, size_t M,
             kernels::Activation act = kernels::Activation::kLinear,
             const kernels::RowsDone* rows_done = nullptr, const kernels::TilesDone* tiles_done = nullptr) const;
  // Whether this layer takes its input best already rounded to bf16 (bf16 weights: oneDNN's, or ours
  // with bf16 instructions; ours without them rounds fp32 x itself, in one pass with its widening).
  bool takes_bf16_input() const;
  // The same with x rounded by kernels::to_bf16_pairs (any bf16 weights; meant where takes_bf16_input()).
  void apply(float* y, size_t ldy, const kernels::Bf16Rows& x, size_t M,
             kernels::Activation act = kernels::Activation::kLinear,
             const kernels::RowsDone* rows_done = nullptr, const kernels::TilesDone* tiles_done = nullptr) const;
  // Whether apply_to_bf16 runs here with this activation (our bf16 or int8 product on AMX tiles:
  // kernels::writes_bf16_output).
  bool writes_bf16_output(kernels::Activation act) const;
  // act(x · Wᵀ + bias) rounded to bf16 pairs (M, out / 2) with row stride ldp, straight from the
  // product (no fp32 y): the same values as apply() followed by kernels::to_bf16_pairs. Only where
  // writes_bf16_output(act).
  // With groups: the columns in groups (kernels::ColumnGroups).
  void apply_to_bf16(uint32_t* out, size_t ldp, const kernels::Bf16Rows& x, size_t M, kernels::Activation act,
                     const kernels::ColumnGroups& groups = {}) const;
  // The same for int8 weights (kernels::packed_linear_to_bf16 in packed_gemm_int8.h).
  void apply_to_bf16(uint32_t* out, size_t ldp, const kernels::QuantizedRows& x, size_t M, kernels::Activation act,
                     const kernels::ColumnGroups& groups = {}) const;
  size_t out() const;
  size_t in() const;
  size_t bytes() const;  // the packed panels and the bias

 private:
  template <class F, class R>
  R visit(F&& f, R empty) const;
  // Whether the weight is Own (our packing) or oneDNN's in precision p; the product on x already
  // converted to that precision (Rows: QuantizedRows or Bf16Rows).
  template <class Own>
  bool holds(kernels::Precision p) const;
  template <class Own, class Rows>
  void apply_converted(float* y, size_t ldy, const Rows& x, size_t M, kernels::Activation act,
                       const kernels::RowsDone* rows_done, const kernels::TilesDone* tiles_done) const;

  std::variant<std::monostate, kernels::PackedWeight, kernels::PackedWeightBf16, kernels::PackedWeightInt8,
               kernels::OneDnnWeight>
      weight_;
  std::vector<float> bias_;  // (out)
};

}  // namespace roberta
