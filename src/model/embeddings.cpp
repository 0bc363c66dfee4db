#include "kernels/layer_norm.h"
#include "model/parts.h"

namespace roberta {

Embeddings load_embeddings(const WeightScope& scope, const ModelConfig& c) {
  const WeightScope s = scope.sub("embeddings");
  Embeddings e;
  e.word = s.tensor("word_embeddings.weight", {c.vocab_size, c.hidden_size});
  e.position = s.tensor("position_embeddings.weight", {c.max_position_embeddings, c.hidden_size});
  e.token_type = s.tensor("token_type_embeddings.weight", {c.type_vocab_size, c.hidden_size});
  e.norm = s.layer_norm("LayerNorm", static_cast<size_t>(c.hidden_size));
  return e;
}

void embeddings_forward(Matrix& x, const Embeddings& e, const Batch& batch, const ModelConfig& c) {
  const auto H = static_cast<size_t>(c.hidden_size);
  const bool absolute = c.position_embedding_type == "absolute";  // relative ones live in the attention
  for (size_t b = 0; b < batch.num_sequences(); ++b) {
    int64_t count = 0;
    for (size_t t = batch.offsets[b]; t < batch.offsets[b + 1]; ++t) {
      const int32_t id = batch.ids[t];
      const int64_t pos = id == c.pad_token_id ? c.pad_token_id : c.pad_token_id + (++count);
      const int32_t type = batch.type_ids.empty() ? 0 : batch.type_ids[t];
      const float* we = e.word + static_cast<size_t>(id) * H;
      const float* pe = e.position + static_cast<size_t>(pos) * H;
      const float* te = e.token_type + static_cast<size_t>(type) * H;
      float* row = x.row(t);
      if (absolute)
        for (size_t h = 0; h < H; ++h) row[h] = we[h] + te[h] + pe[h];
      else
        for (size_t h = 0; h < H; ++h) row[h] = we[h] + te[h];
    }
  }
  kernels::layer_norm(x.data.data(), x.data.data(), nullptr, e.norm.gamma, e.norm.beta, x.rows, H, c.layer_norm_eps);
}

}  // namespace roberta
