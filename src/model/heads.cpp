#include <cstring>

#include "kernels/packed_gemm.h"
#include "kernels/layer_norm.h"
#include "model/parts.h"

namespace roberta {

std::optional<LmHead> load_lm_head(const WeightScope& root, const WeightScope& encoder, const Embeddings& e,
                                   const ModelConfig& c) {
  const WeightScope s = root.sub("lm_head");
  if (!s.has("dense.weight")) return std::nullopt;
  const auto H = static_cast<size_t>(c.hidden_size), V = static_cast<size_t>(c.vocab_size);
  LmHead head;
  head.dense = s.packed("dense", H, H, s.head_type());
  head.norm = s.layer_norm("layer_norm", H);
  if (s.has("decoder.weight"))
    head.decoder = LazyPackedWeight(s.tensor("decoder.weight", {c.vocab_size, c.hidden_size}), V, H,
                                    s.page_release("decoder.weight"));
  else  // tied to the word embeddings
    head.decoder = LazyPackedWeight(e.word, V, H, encoder.page_release("embeddings.word_embeddings.weight"));
  if (s.has("decoder.bias"))
    head.decoder_bias = s.tensor("decoder.bias", {c.vocab_size});
  else if (s.has("bias"))
    head.decoder_bias = s.tensor("bias", {c.vocab_size});
  return head;
}

Matrix lm_head_forward(const LmHead& head, const Matrix& x, const std::vector<size_t>& rows, const ModelConfig& c) {
  const size_t R = rows.size(), H = x.cols, V = static_cast<size_t>(c.vocab_size);
  Matrix gathered(R, H), h(R, H);
  for (size_t r = 0; r < R; ++r) std::memcpy(gathered.row(r), x.row(rows[r]), H * sizeof(float));
  head.dense.apply(h.data.data(), H, gathered.data.data(), R, kernels::Activation::kGelu);
  kernels::layer_norm(h.data.data(), h.data.data(), nullptr, head.norm.gamma, head.norm.beta, R, H, c.layer_norm_eps);
  Matrix logits(R, V);
  kernels::packed_linear(logits.data.data(), V, h.data.data(), head.decoder.get(), head.decoder_bias, R);
  return logits;
}

std::optional<Pooler> load_pooler(const WeightScope& scope, const ModelConfig& c) {
  if (!scope.has("pooler.dense.weight")) return std::nullopt;
  const auto H = static_cast<size_t>(c.hidden_size);
  return Pooler{scope.packed("pooler.dense", H, H, scope.head_type())};
}

Matrix pooler_forward(const Pooler& pooler, const Matrix& x, const Batch& batch) {
  const size_t B = batch.num_sequences(), H = x.cols;
  Matrix first(B, H), pooled(B, H);
  for (size_t b = 0; b < B; ++b)
    if (batch.offsets[b + 1] > batch.offsets[b]) std::memcpy(first.row(b), x.row(batch.offsets[b]), H * sizeof(float));
  pooler.dense.apply(pooled.data.data(), H, first.data.data(), B, kernels::Activation::kTanh);
  return pooled;
}

std::optional<SequenceClassifier> load_sequence_classifier(const WeightScope& root, const ModelConfig& c) {
  const WeightScope s = root.sub("classifier");
  if (!s.has("out_proj.weight")) return std::nullopt;
  const auto H = static_cast<size_t>(c.hidden_size), N = static_cast<size_t>(c.num_labels());
  return SequenceClassifier{s.packed("dense", H, H, s.head_type()), s.packed("out_proj", N, H, s.head_type())};
}

Matrix sequence_classifier_forward(const SequenceClassifier& head, const Matrix& x, const Batch& batch) {
  const size_t B = batch.num_sequences(), H = x.cols, N = head.out_proj.out();
  Matrix first(B, H), hidden(B, H), logits(B, N);
  for (size_t b = 0; b < B; ++b)
    if (batch.offsets[b + 1] > batch.offsets[b]) std::memcpy(first.row(b), x.row(batch.offsets[b]), H * sizeof(float));
  head.dense.apply(hidden.data.data(), H, first.data.data(), B, kernels::Activation::kTanh);
  head.out_proj.apply(logits.data.data(), N, hidden.data.data(), B);
  return logits;
}

std::optional<TokenLinear> load_token_linear(const WeightScope& root, const std::string& name, size_t out,
                                             const ModelConfig& c) {
  if (!root.has(name + ".weight")) return std::nullopt;
  return TokenLinear{root.packed(name, out, static_cast<size_t>(c.hidden_size), root.head_type())};
}

Matrix token_linear_forward(const TokenLinear& head, const Matrix& x) {
  const size_t N = head.linear.out();
  Matrix out(x.rows, N);
  head.linear.apply(out.data.data(), N, x.data.data(), x.rows);
  return out;
}

}  // namespace roberta
