#include "roberta/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "kernels/attention.h"
#include "kernels/gemm.h"
#include "kernels/layer_norm.h"
#include "kernels/packed_gemm.h"
#include "roberta/error.h"
#include "roberta/dev/weights.h"
#include "thread_pool.h"

namespace roberta {

Batch Batch::from_sequences(const std::vector<std::vector<int32_t>>& sequences) {
  Batch b;
  for (const auto& s : sequences) b.add_sequence(s);
  return b;
}

void Batch::add_sequence(std::span<const int32_t> sequence_ids) {
  ids.insert(ids.end(), sequence_ids.begin(), sequence_ids.end());
  offsets.push_back(ids.size());
}

namespace {

struct Linear {
  const float* w = nullptr;  // (out, in)
  const float* b = nullptr;  // (out)
  size_t out = 0, in = 0;
  std::string weight_name;
};

struct Norm {
  const float* gamma = nullptr;
  const float* beta = nullptr;
};

// A Linear whose weight is repacked for the packed GEMM, in fp32 or bf16 (the bias stays fp32).
struct PackedLinear {
  kernels::PackedWeight w;
  kernels::PackedWeightBf16 w_bf16;
  bool bf16 = false;
  const float* b = nullptr;
  std::vector<float> own_bias;  // when several biases are joined (Q, K and V)

  // y (M, out) with row stride ldy = act(x (M, in) · Wᵀ + bias)
  void apply(const float* x, size_t M, float* y, size_t ldy, Activation act = Activation::kLinear) const {
    if (bf16)
      kernels::packed_linear(x, M, w_bf16, b, y, ldy, act);
    else
      kernels::packed_linear(x, M, w, b, y, ldy, act);
  }
  size_t bytes() const { return bf16 ? w_bf16.bytes() : w.bytes(); }
};

struct Layer {
  PackedLinear qkv, attn_out, inter, out;  // Q, K and V joined into one (3H, H) product
  Norm attn_norm, out_norm;
};

}  // namespace

struct Model::Impl {
  std::filesystem::path dir;
  LoadOptions options;
  ModelConfig config;
  WeightStore store;
  std::vector<std::vector<float>> owned;  // converted (F16/BF16/unaligned) tensors
  const float* word_emb = nullptr;
  const float* pos_emb = nullptr;
  const float* type_emb = nullptr;
  Norm emb_norm;
  std::vector<Layer> layers;
  bool has_pooler = false, has_lm_head = false;
  PackedLinear pooler, lm_dense;
  Linear decoder;
  Norm lm_norm;
  std::vector<float> zero_decoder_bias;
  std::set<std::string> released;  // tensors whose packed copy is used instead
  size_t params = 0;

  const float* tensor(const std::string& name, std::vector<int64_t> shape, bool required = true);
  std::optional<std::string> prefix_name(const std::string& name) const;
  Linear linear(const std::string& name, size_t out, size_t in);
  PackedLinear packed(const std::vector<Linear>& parts);
  void release(const Linear& l);
  PackedLinear packed(const std::string& name, size_t out, size_t in) { return packed({linear(name, out, in)}); }
  Norm norm(const std::string& name, size_t size);
};

const float* Model::Impl::tensor(const std::string& name, std::vector<int64_t> shape, bool required) {
  const TensorInfo* t = store.find(name);
  if (!t) {
    if (required) throw Error(dir.string() + ": tensor \"" + name + "\" is missing");
    return nullptr;
  }
  if (t->shape != shape) {
    const auto fmt = [](const std::vector<int64_t>& s) {
      std::string out = "[";
      for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
      return out + "]";
    };
    throw Error(t->file + ": tensor \"" + name + "\" has shape " + fmt(t->shape) + " but config.json implies " +
                fmt(shape));
  }
  params += static_cast<size_t>(t->numel());
  if (const float* in_place = WeightStore::f32_in_place(*t)) return in_place;
  owned.push_back(store.to_float(*t));
  return owned.back().data();
}

Linear Model::Impl::linear(const std::string& name, size_t out, size_t in) {
  Linear l;
  l.out = out, l.in = in;
  l.weight_name = name + ".weight";
  l.w = tensor(l.weight_name, {static_cast<int64_t>(out), static_cast<int64_t>(in)});
  l.b = tensor(name + ".bias", {static_cast<int64_t>(out)});
  return l;
}

// Packs one Linear, or several with the same input size stacked along the output (Q, K, V).
PackedLinear Model::Impl::packed(const std::vector<Linear>& parts) {
  PackedLinear p;
  const size_t in = parts[0].in;
  size_t out = 0;
  for (const Linear& l : parts) out += l.out;
  p.bf16 = options.weights == WeightType::kBF16;
  const auto pack = [&](const float* w) {
    if (p.bf16)
      p.w_bf16 = kernels::PackedWeightBf16(w, out, in);
    else
      p.w = kernels::PackedWeight(w, out, in);
  };
  if (parts.size() == 1) {
    pack(parts[0].w);
    p.b = parts[0].b;
    release(parts[0]);
    return p;
  }
  std::vector<float> w(out * in);
  size_t row = 0;
  for (const Linear& l : parts) {
    std::copy_n(l.w, l.out * in, w.begin() + static_cast<ptrdiff_t>(row * in));
    p.own_bias.insert(p.own_bias.end(), l.b, l.b + l.out);
    row += l.out;
  }
  pack(w.data());
  p.b = p.own_bias.data();
  for (const Linear& l : parts) release(l);
  return p;
}

// Once packed, a weight's original is not read again: free its fp32 conversion, or let the
// kernel drop its pages of the mapped file, so the weights are not held twice.
void Model::Impl::release(const Linear& l) {
  for (auto it = owned.begin(); it != owned.end(); ++it)
    if (it->data() == l.w) {
      owned.erase(it);
      return;
    }
  if (const TensorInfo* t = store.find(l.weight_name)) WeightStore::release_pages(*t);
  released.insert(l.weight_name);
}

Norm Model::Impl::norm(const std::string& name, size_t size) {
  const std::vector<int64_t> shape{static_cast<int64_t>(size)};
  const bool legacy = !store.find(name + ".weight") && store.find(name + ".gamma");
  return {tensor(name + (legacy ? ".gamma" : ".weight"), shape), tensor(name + (legacy ? ".beta" : ".bias"), shape)};
}

Model Model::load(const std::filesystem::path& dir, const LoadOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw Error(dir.string() + ": model folder not found");
  auto impl = std::make_shared<Impl>();
  impl->dir = dir;
  impl->options = options;
  impl->config = ModelConfig::from_file(dir / "config.json");
  impl->store = WeightStore::open_dir(dir);
  Impl& m = *impl;
  const ModelConfig& c = m.config;
  const auto H = static_cast<size_t>(c.hidden_size), I = static_cast<size_t>(c.intermediate_size);
  const auto V = static_cast<size_t>(c.vocab_size);

  std::string p;  // "roberta." for RobertaForMaskedLM, "" for RobertaModel exports
  if (m.store.find("roberta.embeddings.word_embeddings.weight"))
    p = "roberta.";
  else if (!m.store.find("embeddings.word_embeddings.weight"))
    throw Error(dir.string() + ": no word embeddings (expected \"roberta.embeddings.word_embeddings.weight\" or "
                               "\"embeddings.word_embeddings.weight\")");
  m.word_emb = m.tensor(p + "embeddings.word_embeddings.weight", {c.vocab_size, c.hidden_size});
  m.pos_emb = m.tensor(p + "embeddings.position_embeddings.weight", {c.max_position_embeddings, c.hidden_size});
  m.type_emb = m.tensor(p + "embeddings.token_type_embeddings.weight", {c.type_vocab_size, c.hidden_size});
  m.emb_norm = m.norm(p + "embeddings.LayerNorm", H);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string l = p + "encoder.layer." + std::to_string(i) + ".";
    Layer layer;
    layer.qkv = m.packed({m.linear(l + "attention.self.query", H, H), m.linear(l + "attention.self.key", H, H),
                          m.linear(l + "attention.self.value", H, H)});
    layer.attn_out = m.packed(l + "attention.output.dense", H, H);
    layer.attn_norm = m.norm(l + "attention.output.LayerNorm", H);
    layer.inter = m.packed(l + "intermediate.dense", I, H);
    layer.out = m.packed(l + "output.dense", H, I);
    layer.out_norm = m.norm(l + "output.LayerNorm", H);
    m.layers.push_back(std::move(layer));
  }
  if (m.store.find(p + "encoder.layer." + std::to_string(c.num_hidden_layers) + ".attention.self.query.weight"))
    throw Error(dir.string() + ": checkpoint has more layers than num_hidden_layers = " +
                std::to_string(c.num_hidden_layers));
  m.has_pooler = m.store.find(p + "pooler.dense.weight") != nullptr;
  if (m.has_pooler) m.pooler = m.packed(p + "pooler.dense", H, H);
  m.has_lm_head = m.store.find("lm_head.dense.weight") != nullptr;
  if (m.has_lm_head) {
    m.lm_dense = m.packed("lm_head.dense", H, H);
    m.lm_norm = m.norm("lm_head.layer_norm", H);
    m.decoder.out = V, m.decoder.in = H;
    m.decoder.w = m.store.find("lm_head.decoder.weight")
                      ? m.tensor("lm_head.decoder.weight", {c.vocab_size, c.hidden_size})
                      : m.word_emb;  // tied
    const std::vector<int64_t> vshape{c.vocab_size};
    if (m.store.find("lm_head.decoder.bias"))
      m.decoder.b = m.tensor("lm_head.decoder.bias", vshape);
    else if (m.store.find("lm_head.bias"))
      m.decoder.b = m.tensor("lm_head.bias", vshape);
    else {
      m.zero_decoder_bias.assign(V, 0.0f);
      m.decoder.b = m.zero_decoder_bias.data();
    }
  }
  return Model(std::move(impl));
}

const ModelConfig& Model::config() const { return impl_->config; }
bool Model::has_lm_head() const { return impl_->has_lm_head; }
bool Model::has_pooler() const { return impl_->has_pooler; }
size_t Model::parameter_count() const { return impl_->params; }
const std::filesystem::path& Model::dir() const { return impl_->dir; }
std::vector<std::string> Model::files() const { return impl_->store.files(); }

size_t Model::weight_bytes() const {
  const Impl& m = *impl_;
  size_t n = 0;  // what is kept: unpacked tensors (mapped or converted) and the packed weights
  for (const auto& v : m.owned) n += v.size() * sizeof(float);
  for (const auto& [name, t] : m.store.tensors())
    if (WeightStore::f32_in_place(t) && !m.released.count(name)) n += t.nbytes;
  for (const Layer& l : m.layers) n += l.qkv.bytes() + l.attn_out.bytes() + l.inter.bytes() + l.out.bytes();
  n += m.pooler.bytes() + m.lm_dense.bytes();
  return n;
}

std::string Model::dtype_summary() const {
  std::map<std::string, size_t> counts;
  for (const auto& [_, t] : impl_->store.tensors()) ++counts[dtype_name(t.dtype)];
  std::string out;
  for (const auto& [name, n] : counts) out += (out.empty() ? "" : ", ") + name + " (" + std::to_string(n) + " tensors)";
  return out;
}

Outputs Model::forward(const Batch& batch, const ForwardOptions& options) const {
  const Impl& m = *impl_;
  const ModelConfig& c = m.config;
  const size_t T = batch.num_tokens(), B = batch.num_sequences();
  const auto H = static_cast<size_t>(c.hidden_size), I = static_cast<size_t>(c.intermediate_size);
  const auto V = static_cast<size_t>(c.vocab_size);
  if (batch.offsets.empty() || batch.offsets.front() != 0 || batch.offsets.back() != T)
    throw Error("batch: offsets must start at 0 and end at the number of tokens");
  for (size_t b = 0; b < B; ++b) {
    if (batch.offsets[b + 1] < batch.offsets[b]) throw Error("batch: offsets must not decrease");
    const size_t len = batch.offsets[b + 1] - batch.offsets[b];
    if (static_cast<int64_t>(len) > c.max_sequence_length())
      throw Error("sequence " + std::to_string(b) + " has " + std::to_string(len) + " tokens; the model allows at most " +
                  std::to_string(c.max_sequence_length()));
  }
  if (!batch.type_ids.empty() && batch.type_ids.size() != T) throw Error("batch: type_ids must have one entry per token");
  for (size_t t = 0; t < T; ++t) {
    if (batch.ids[t] < 0 || batch.ids[t] >= c.vocab_size)
      throw Error("token " + std::to_string(t) + ": id " + std::to_string(batch.ids[t]) + " is outside the vocabulary [0, " +
                  std::to_string(c.vocab_size) + ")");
    if (!batch.type_ids.empty() && (batch.type_ids[t] < 0 || batch.type_ids[t] >= c.type_vocab_size))
      throw Error("token " + std::to_string(t) + ": token type " + std::to_string(batch.type_ids[t]) + " is out of range");
  }
  if (options.logits && !m.has_lm_head) throw Error(m.dir.string() + ": the model has no MLM head (lm_head.* tensors)");
  if (options.pooler && !m.has_pooler) throw Error(m.dir.string() + ": the model has no pooler (pooler.dense.*)");
  for (size_t r : options.logit_rows)
    if (r >= T) throw Error("logit row " + std::to_string(r) + " is outside the batch's " + std::to_string(T) + " tokens");

  Outputs out;
  Matrix x(T, H);
  // Embeddings: word + position + token type, then LayerNorm. Positions as HF computes them:
  // pad_token_id + running count of non-pad tokens; pad tokens get pad_token_id.
  for (size_t b = 0; b < B; ++b) {
    int64_t count = 0;
    for (size_t t = batch.offsets[b]; t < batch.offsets[b + 1]; ++t) {
      const int32_t id = batch.ids[t];
      const int64_t pos = id == c.pad_token_id ? c.pad_token_id : c.pad_token_id + (++count);
      const int32_t type = batch.type_ids.empty() ? 0 : batch.type_ids[t];
      const float* we = m.word_emb + static_cast<size_t>(id) * H;
      const float* pe = m.pos_emb + static_cast<size_t>(pos) * H;
      const float* te = m.type_emb + static_cast<size_t>(type) * H;
      float* row = x.row(t);
      for (size_t h = 0; h < H; ++h) row[h] = we[h] + te[h] + pe[h];
    }
  }
  kernels::layer_norm(x.data.data(), nullptr, m.emb_norm.gamma, m.emb_norm.beta, c.layer_norm_eps, T, H, x.data.data());
  if (options.all_hidden_states) out.hidden_states.push_back(x);

  thread_local std::vector<float> qkv, ctx, tmp, inter;
  qkv.resize(T * 3 * H), ctx.resize(T * H), tmp.resize(T * H), inter.resize(T * I);
  const size_t heads = static_cast<size_t>(c.num_attention_heads), d = static_cast<size_t>(c.head_size());
  for (const Layer& L : m.layers) {
    L.qkv.apply(x.data.data(), T, qkv.data(), 3 * H);
    kernels::self_attention(qkv.data(), batch.offsets.data(), B, heads, d, ctx.data());
    L.attn_out.apply(ctx.data(), T, tmp.data(), H);
    kernels::layer_norm(tmp.data(), x.data.data(), L.attn_norm.gamma, L.attn_norm.beta, c.layer_norm_eps, T, H,
                        x.data.data());
    L.inter.apply(x.data.data(), T, inter.data(), I, c.activation);
    L.out.apply(inter.data(), T, tmp.data(), H);
    kernels::layer_norm(tmp.data(), x.data.data(), L.out_norm.gamma, L.out_norm.beta, c.layer_norm_eps, T, H,
                        x.data.data());
    if (options.all_hidden_states) out.hidden_states.push_back(x);
  }

  if (options.logits) {
    std::vector<size_t> rows = options.logit_rows;
    if (rows.empty())
      for (size_t t = 0; t < T; ++t) rows.push_back(t);
    const size_t R = rows.size();
    Matrix gathered(R, H), h(R, H);
    for (size_t r = 0; r < R; ++r) std::memcpy(gathered.row(r), x.row(rows[r]), H * sizeof(float));
    m.lm_dense.apply(gathered.data.data(), R, h.data.data(), H, Activation::kGelu);
    kernels::layer_norm(h.data.data(), nullptr, m.lm_norm.gamma, m.lm_norm.beta, c.layer_norm_eps, R, H, h.data.data());
    out.logits = Matrix(R, V);
    kernels::linear(h.data.data(), R, H, m.decoder.w, m.decoder.b, V, out.logits.data.data(), V);
  }
  if (options.pooler) {
    Matrix first(B, H);
    for (size_t b = 0; b < B; ++b)
      if (batch.offsets[b + 1] > batch.offsets[b]) std::memcpy(first.row(b), x.row(batch.offsets[b]), H * sizeof(float));
    out.pooler_output = Matrix(B, H);
    m.pooler.apply(first.data.data(), B, out.pooler_output.data.data(), H, Activation::kTanh);
  }
  out.last_hidden_state = std::move(x);
  return out;
}

}  // namespace roberta
