#pragma once
// The buffers of one forward pass, shared by its layers and sized from their plans: fp32 where a
// layer's ops go through fp32, and the bf16 / int8 forms its plan keeps values in.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"
#include "roberta/config.h"
#include "util/scratch.h"

namespace roberta {

struct EncoderLayer;

// Rows quantized to int8: quads (rows, k / 4) and a scale per row.
struct Int8Buffer {
  uint32_t* quads = nullptr;
  float* scales = nullptr;
  kernels::QuantizedRows rows() const { return {quads, scales}; }
};

// T tokens' buffers (H = hidden size, I = intermediate size); null where no layer's plan uses them.
struct LayerWorkspace {
  float* qkv = nullptr;           // (T, 3H)
  float* context = nullptr;       // (T, H)
  float* tmp = nullptr;           // (T, H): a block's output product, before the residual
  float* intermediate = nullptr;  // (T, I)
  float* normed = nullptr;        // (T, H): the pre-LN block's normalised input
  Int8Buffer x_int8;              // x quantized: (T, H/4) quads
  uint32_t* x_bf16 = nullptr;     // x as bf16 pairs (T, H/2)
  uint16_t* qkv_bf16 = nullptr;   // Q, K, V: 3 · heads matrices (T, 64) of bf16 values (self_attention's)
  uint32_t* context_bf16 = nullptr;       // (T, H/2) pairs
  Int8Buffer context_int8;                // (T, H/4) quads
  uint32_t* intermediate_bf16 = nullptr;  // act(intermediate) as (T, I/2) pairs
  Int8Buffer intermediate_int8;           // (T, I/4) quads
  // x_int8 or x_bf16 holds x: the layer before left it there for this one.
  bool x_converted = false;
};

// The buffers for T tokens through `layers`, each as large as the layers' plans need; per thread,
// kept for the next pass while small (util/scratch.h).
class ForwardWorkspace {
 public:
  ForwardWorkspace(const std::vector<EncoderLayer>& layers, const ModelConfig& c, size_t T);
  LayerWorkspace& ws() { return ws_; }

 private:
  // Elements of each buffer, named as LayerWorkspace's (quads/pairs: uint32_t; scales: float).
  struct Sizes {
    size_t qkv, context, tmp, intermediate, normed;
    size_t x_quads, x_scales, x_pairs, qkv_pairs, context_pairs, context_quads, context_scales;
    size_t intermediate_pairs, intermediate_quads, intermediate_scales;
  };
  static Sizes sizes(const std::vector<EncoderLayer>& layers, const ModelConfig& c, size_t T);
  explicit ForwardWorkspace(const Sizes& s);

  util::Scratch<uint32_t> x_quads_, x_pairs_, qkv_pairs_, context_pairs_, context_quads_, intermediate_pairs_,
      intermediate_quads_;
  util::Scratch<float> x_scales_, context_scales_, intermediate_scales_;
  util::Scratch<float> qkv_, context_, tmp_, intermediate_, normed_;
  LayerWorkspace ws_;
};

}  // namespace roberta
