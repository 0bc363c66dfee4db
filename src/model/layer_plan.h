#pragma once
// How an encoder layer runs, decided once at load from its weights: the format its products read
// their input in, and where values stay in bf16 or int8 between two ops instead of going through
// fp32. Each product sees the same values whichever buffer carries them, so the outputs are the
// same bit for bit; the plan saves passes and memory (docs/performance.md#figures-behind-the-code).
#include "roberta/config.h"

namespace roberta {

struct EncoderLayer;

struct LayerPlan {
  // The format the QKV and intermediate products read x in (bf16: the output product reads
  // act(intermediate) so too). x is converted to it by the op before, on each row as it is
  // finished (RowsDone), not in a pass of its own; in bf16 act(intermediate) is, tile by tile
  // (TilesDone).
  enum class Input { kF32, kInt8, kBf16 };
  Input input = Input::kF32;
  // Q, K and V rounded to bf16 by the QKV product's epilogue, head by head, for the bf16 attention.
  bool qkv_bf16 = false;
  // With qkv_bf16: the attention writes its context as bf16 pairs (int8: quantized from there).
  bool context_converted = false;
  // act(intermediate) written as bf16 by the intermediate product's epilogue (int8: then quantized).
  bool intermediate_bf16 = false;

  bool converts() const { return input != Input::kF32; }
};

// The plan of layer L (its weights, attention and activation). A pre-LayerNorm layer runs in fp32
// between its products.
LayerPlan plan_layer(const EncoderLayer& L, const ModelConfig& c);

}  // namespace roberta
