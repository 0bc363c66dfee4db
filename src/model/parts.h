#pragma once
// The parts of RobertaModel and its heads, in the order of Hugging Face's RobertaModel.forward,
// each as weights (a struct, with the shape of every tensor) and one function. Tokens of a batch
// are packed end to end: T tokens in B sequences, sequence b is rows [offsets[b], offsets[b+1]).
// H = hidden size, I = intermediate size, V = vocabulary.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/activation.h"
#include "kernels/attention.h"
#include "model/lazy_packed_weight.h"
#include "model/packed_linear.h"
#include "model/weight_scope.h"
#include "roberta/config.h"
#include "roberta/model.h"

namespace roberta {

// ---- embeddings: word + position + token type, then LayerNorm
struct Embeddings {
  const float* word = nullptr;      // (V, H)
  const float* position = nullptr;  // (max_position_embeddings, H)
  const float* token_type = nullptr;  // (type_vocab_size, H)
  LayerNormWeights norm;            // (H)
};
Embeddings load_embeddings(const WeightScope& scope, const ModelConfig& c);
// x (T, H) = LayerNorm(word[id] + position[pos] + token_type[type]); positions as Hugging Face
// computes them from the ids: pad_token_id + running count of non-pad ids; pad ids get pad_token_id.
void embeddings_forward(Matrix& x, const Embeddings& e, const Batch& batch, const ModelConfig& c);

// ---- one encoder block: post-LayerNorm (RoBERTa) or pre-LayerNorm (roberta-prelayernorm)
struct EncoderLayer {
  PackedLinear qkv;           // (3H, H): Q, K and V joined into one product
  PackedLinear attn_out;      // (H, H)
  LayerNormWeights attn_norm; // (H): after the attention (post-LN), or before it (pre-LN)
  PackedLinear intermediate;  // (I, H), followed by hidden_act
  PackedLinear output;        // (H, I)
  LayerNormWeights out_norm;  // (H): after the feed-forward (post-LN), or before it (pre-LN)
  bool pre_layer_norm = false;
  kernels::RelativePositions relative;  // distance_embedding (2P - 1, H / heads) when not absolute
  // bf16 products in attention for the bf16 and int8 encoders (their matrix inputs are rounded at
  // least as coarsely); fp32 for the fp32 encoder.
  kernels::AttentionPrecision attention_precision = kernels::AttentionPrecision::kFp32;
};
EncoderLayer load_encoder_layer(const WeightScope& scope, const ModelConfig& c);

// Intermediate buffers of one forward pass, reused by every layer.
struct LayerWorkspace {
  // qkv, context, intermediate: null where no layer uses them (layer_f32_needs).
  float* qkv = nullptr;           // (T, 3H)
  float* context = nullptr;       // (T, H)
  float* tmp = nullptr;           // (T, H)
  float* intermediate = nullptr;  // (T, I)
  float* normed = nullptr;        // (T, H): the pre-LN block's normalised input
  // Where the products take their inputs quantized (int8, takes_quantized_input): x as (T, H/4)
  // quads + (T) scales; else null.
  uint32_t* h_quads = nullptr;
  float* h_scales = nullptr;
  // Where they take them rounded to bf16 (takes_bf16_input): x as (T, H/2) pairs and
  // act(intermediate) as (T, I/2) pairs; else null.
  uint32_t* h_pairs = nullptr;
  uint32_t* i_pairs = nullptr;
  // int8 where the intermediate product writes bf16 (PackedLinear::writes_bf16_output):
  // act(intermediate) as bf16 pairs in i_pairs, then quantized from there for the output product:
  // (T, I/4) quads + (T) scales. Else null.
  uint32_t* i_quads = nullptr;
  float* i_scales = nullptr;
  // Where the attention takes Q, K, V in bf16 (kernels::attention_takes_bf16) and the QKV product
  // writes bf16: they go there instead of qkv, head by head (3 · heads matrices (T, 64) of bf16
  // values, as kernels::self_attention takes them). Else null.
  uint16_t* qkv16 = nullptr;
  // With qkv16: the attention's context rounded to bf16 pairs (T, H / 2), and for int8 quantized
  // from there, (T, H / 4) quads + (T) scales, for the attention's output product. Else null.
  uint32_t* context_pairs = nullptr;
  uint32_t* context_quads = nullptr;
  float* context_scales = nullptr;
};
// Which of ws's fp32 buffers (qkv, context, intermediate) the layer reads or writes, given the
// conversion buffers ws has (their pointers decide the layer's paths; the fp32 ones do not): where
// the bf16 and int8 encoders keep Q, K, V, the context or act(intermediate) in bf16, the fp32
// buffer is never touched. tmp always is, normed for the pre-LN block.
struct LayerF32Needs {
  bool qkv = true, context = true, intermediate = true;
};
LayerF32Needs layer_f32_needs(const EncoderLayer& L, const ModelConfig& c, kernels::Activation act,
                              const LayerWorkspace& ws);
// x (T, H) = the block applied to x, in place. x_converted: ws holds x in the products' input
// precision (int8 quads or bf16 pairs; the layer before left it there). convert_x: leave the
// result converted there too, for the next layer; returns whether it did (only where the layer's
// products take int8 or bf16 input).
bool encoder_layer_forward(Matrix& x, const EncoderLayer& L, const Batch& batch, const ModelConfig& c,
                           kernels::Activation act, const LayerWorkspace& ws, bool x_converted = false,
                           bool convert_x = false);

// ---- RobertaLMHead: dense -> gelu -> LayerNorm -> decoder (tied to the word embeddings or not)
struct LmHead {
  PackedLinear dense;        // (H, H)
  LayerNormWeights norm;     // (H)
  // (V, H), always fp32 and on our own GEMM, whose rows do not depend on the other rows of the
  // product (a fill-mask row is the same however the texts are batched); packed at the first
  // call that needs logits.
  LazyPackedWeight decoder;
  const float* decoder_bias = nullptr;  // (V), or null when the checkpoint has none
};
std::optional<LmHead> load_lm_head(const WeightScope& root, const WeightScope& encoder, const Embeddings& e,
                                   const ModelConfig& c);
// logits (rows.size(), V) at the packed token rows `rows` of x (T, H).
Matrix lm_head_forward(const LmHead& head, const Matrix& x, const std::vector<size_t>& rows, const ModelConfig& c);

// ---- RobertaPooler: tanh(dense(hidden state of each sequence's first token))
struct Pooler {
  PackedLinear dense;  // (H, H)
};
std::optional<Pooler> load_pooler(const WeightScope& scope, const ModelConfig& c);
// pooled (B, H) from x (T, H).
Matrix pooler_forward(const Pooler& pooler, const Matrix& x, const Batch& batch);

// ---- RobertaClassificationHead: out_proj(tanh(dense(hidden state of <s>)))
struct SequenceClassifier {
  PackedLinear dense;     // (H, H)
  PackedLinear out_proj;  // (labels, H)
};
std::optional<SequenceClassifier> load_sequence_classifier(const WeightScope& root, const ModelConfig& c);
// logits (B, labels) from x (T, H), each sequence's first token.
Matrix sequence_classifier_forward(const SequenceClassifier& head, const Matrix& x, const Batch& batch);

// ---- RobertaForTokenClassification's classifier, and RobertaForQuestionAnswering's qa_outputs:
// one linear layer on every token.
struct TokenLinear {
  PackedLinear linear;  // (labels, H) or (2, H)
};
std::optional<TokenLinear> load_token_linear(const WeightScope& root, const std::string& name, size_t out,
                                             const ModelConfig& c);
// (T, out) from x (T, H).
Matrix token_linear_forward(const TokenLinear& head, const Matrix& x);

}  // namespace roberta
