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
#include "model/layer_plan.h"
#include "model/layer_workspace.h"
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
  kernels::Activation act = kernels::Activation::kGelu;  // config.hidden_act, after the intermediate product
  LayerPlan plan;
};
EncoderLayer load_encoder_layer(const WeightScope& scope, const ModelConfig& c, kernels::Activation act);

// x (T, H) = the block applied to x, in place, on ws's buffers as L.plan says. next_layer: a
// layer follows, so leave x converted in ws for it where the plan converts (ws.x_converted).
void encoder_layer_forward(Matrix& x, const EncoderLayer& L, const Batch& batch, const ModelConfig& c,
                           LayerWorkspace& ws, bool next_layer);

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
