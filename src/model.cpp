#include "roberta/model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <numeric>
#include <span>

#include "activation_names.h"
#include "kernels/activations.h"
#include "kernels/isa.h"
#include "runtime/plan.h"
#include "kernels/layer_norm.h"
#include "model/parts.h"
#include "roberta/error.h"
#include "util/scratch.h"

namespace roberta {

WeightType recommended_weight_type() {
  return kernels::usable_isa() >= kernels::Isa::kAvx512Bf16 ? WeightType::kBF16 : WeightType::kF32;
}

Batch Batch::from_sequences(const std::vector<std::vector<int32_t>>& sequences) {
  Batch b;
  for (const auto& s : sequences) b.add_sequence(s);
  return b;
}

Batch Batch::from_padded(std::span<const int64_t> ids, std::span<const int64_t> mask,
                         std::span<const int64_t> type_ids, size_t B, size_t L, std::vector<size_t>* where) {
  Batch batch;
  for (size_t b = 0; b < B; ++b) {
    for (size_t l = 0; l < L; ++l)
      if (mask[b * L + l]) {
        batch.ids.push_back(static_cast<int32_t>(ids[b * L + l]));
        if (!type_ids.empty()) batch.type_ids.push_back(static_cast<int32_t>(type_ids[b * L + l]));
        if (where) where->push_back(b * L + l);
      }
    batch.offsets.push_back(batch.ids.size());
  }
  return batch;
}

void Batch::add_sequence(std::span<const int32_t> sequence_ids) {
  ids.insert(ids.end(), sequence_ids.begin(), sequence_ids.end());
  offsets.push_back(ids.size());
}

struct Model::Impl {
  std::filesystem::path dir;
  ModelConfig config;
  kernels::Activation activation;  // config.hidden_act
  WeightLoader weights;
  Embeddings embeddings;
  std::vector<EncoderLayer> layers;
  std::optional<LayerNormWeights> final_norm;  // roberta-prelayernorm's LayerNorm after the encoder
  std::optional<LmHead> lm_head;
  std::optional<Pooler> pooler;
  std::optional<SequenceClassifier> sequence_classifier;
  std::optional<TokenLinear> token_classifier;
  std::optional<TokenLinear> qa_outputs;
  mutable std::atomic<bool> warned_non_finite{false};  // (check_outputs says so once)

  void check_outputs(const Batch& batch, const Outputs& out) const;

  Impl(const std::filesystem::path& d, ModelConfig c, WeightStore store, WeightType type)
      : dir(d), config(std::move(c)), activation(activation_from_name(config.hidden_act)),
        weights(std::move(store), d, type) {}
};

Model Model::load(const std::filesystem::path& dir, const LoadOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw Error(dir.string() + (std::filesystem::exists(dir, ec) ? ": is a file, not a model folder" : ": model folder not found"),
                ErrorKind::kIo);
  runtime::plan();  // a bad ROBERTA_* setting is an error now, not at the first forward pass
  auto impl = std::make_shared<Impl>(dir, ModelConfig::from_file(dir / "config.json"), WeightStore::open_dir(dir),
                                     options.weights);
  Impl& m = *impl;
  const ModelConfig& c = m.config;
  const WeightScope encoder = m.weights.encoder();
  m.embeddings = load_embeddings(encoder, c);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    m.layers.push_back(load_encoder_layer(encoder.sub("encoder.layer." + std::to_string(i)), c, m.activation));
  // As transformers: layers beyond num_hidden_layers are loaded by nobody (a model cut down by
  // editing config.json runs its first layers), with a warning naming them.
  int64_t stored = c.num_hidden_layers;
  while (encoder.has("encoder.layer." + std::to_string(stored) + ".attention.self.query.weight")) ++stored;
  if (stored > c.num_hidden_layers) {
    const std::string first = "encoder.layer." + std::to_string(c.num_hidden_layers);
    warn(dir.string() + ": the checkpoint has " + std::to_string(stored) +
         " layers; config.json's num_hidden_layers = " + std::to_string(c.num_hidden_layers) + " runs the first " +
         std::to_string(c.num_hidden_layers) + " (" +
         (stored - c.num_hidden_layers == 1 ? first + " is" : first + " to " + std::to_string(stored - 1) + " are") +
         " not used, as in transformers)");
  }
  if (c.model_type == "roberta-prelayernorm") m.final_norm = encoder.layer_norm("LayerNorm", static_cast<size_t>(c.hidden_size));
  m.pooler = load_pooler(encoder, c);
  const WeightScope root = m.weights.root();
  m.lm_head = load_lm_head(root, encoder, m.embeddings, c);
  m.sequence_classifier = load_sequence_classifier(root, c);
  m.token_classifier = load_token_linear(root, "classifier", static_cast<size_t>(c.num_labels()), c);
  m.qa_outputs = load_token_linear(root, "qa_outputs", 2, c);
  return Model(std::move(impl));
}

const char* head_name(Head head) {
  switch (head) {
    case Head::kMaskedLm: return "MLM head (lm_head.*)";
    case Head::kPooler: return "pooler (pooler.dense.*)";
    case Head::kSequenceClassification: return "sequence classification head (classifier.dense.*, classifier.out_proj.*)";
    case Head::kTokenClassification: return "token classification head (classifier.weight, classifier.bias)";
    case Head::kQuestionAnswering: return "question answering head (qa_outputs.*)";
  }
  return "?";
}

bool Model::has_head(Head head) const {
  const Impl& m = *impl_;
  switch (head) {
    case Head::kMaskedLm: return m.lm_head.has_value();
    case Head::kPooler: return m.pooler.has_value();
    case Head::kSequenceClassification: return m.sequence_classifier.has_value();
    case Head::kTokenClassification: return m.token_classifier.has_value();
    case Head::kQuestionAnswering: return m.qa_outputs.has_value();
  }
  return false;
}

void Model::require_head(Head head, const std::string& purpose) const {
  if (has_head(head)) return;
  std::string present;
  for (Head h : {Head::kMaskedLm, Head::kPooler, Head::kSequenceClassification, Head::kTokenClassification,
                 Head::kQuestionAnswering})
    if (has_head(h)) present += (present.empty() ? "" : "; ") + std::string(head_name(h));
  throw Error(impl_->dir.string() + ": the model has no " + head_name(head) + ", " + purpose +
                  " (it has: " + (present.empty() ? "no head" : present) + ")",
              ErrorKind::kInvalidModel);
}

const ModelConfig& Model::config() const { return impl_->config; }
bool Model::has_lm_head() const { return has_head(Head::kMaskedLm); }
bool Model::has_pooler() const { return has_head(Head::kPooler); }
size_t Model::parameter_count() const { return impl_->weights.parameter_count(); }
const std::filesystem::path& Model::dir() const { return impl_->dir; }
std::vector<std::string> Model::files() const { return impl_->weights.store().files(); }

size_t Model::weight_bytes() const {
  const Impl& m = *impl_;
  size_t n = m.weights.unpacked_bytes();  // what is kept besides the packed copies
  for (const EncoderLayer& l : m.layers)
    n += l.qkv.bytes() + l.attn_out.bytes() + l.intermediate.bytes() + l.output.bytes();
  if (m.pooler) n += m.pooler->dense.bytes();
  if (m.lm_head) n += m.lm_head->dense.bytes() + m.lm_head->decoder.bytes();
  if (m.sequence_classifier) n += m.sequence_classifier->dense.bytes() + m.sequence_classifier->out_proj.bytes();
  if (m.token_classifier) n += m.token_classifier->linear.bytes();
  if (m.qa_outputs) n += m.qa_outputs->linear.bytes();
  return n;
}

std::string Model::dtype_summary() const {
  std::map<std::string, size_t> counts;
  for (const auto& [_, t] : impl_->weights.store().tensors()) ++counts[dtype_name(t.dtype)];
  std::string out;
  for (const auto& [name, n] : counts) out += (out.empty() ? "" : ", ") + name + " (" + std::to_string(n) + " tensors)";
  return out;
}

namespace {

// Errors name the sequence, token and limit at fault.
void check_batch(const Batch& batch, const ModelConfig& c) {
  const size_t T = batch.num_tokens(), B = batch.num_sequences();
  if (batch.offsets.empty() || batch.offsets.front() != 0 || batch.offsets.back() != T)
    throw Error("batch: offsets must start at 0 and end at the number of tokens");
  for (size_t b = 0; b < B; ++b) {
    if (batch.offsets[b + 1] < batch.offsets[b]) throw Error("batch: offsets must not decrease");
    const size_t len = batch.offsets[b + 1] - batch.offsets[b];
    if (static_cast<int64_t>(len) > c.max_sequence_length())
      throw Error("sequence " + std::to_string(b) + " has " + std::to_string(len) +
                  " tokens; the model allows at most " + std::to_string(c.max_sequence_length()));
  }
  if (!batch.type_ids.empty() && batch.type_ids.size() != T) throw Error("batch: type_ids must have one entry per token");
  for (size_t t = 0; t < T; ++t) {
    if (batch.ids[t] < 0 || batch.ids[t] >= c.vocab_size)
      throw Error("token " + std::to_string(t) + ": id " + std::to_string(batch.ids[t]) +
                  " is outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
    if (!batch.type_ids.empty() && (batch.type_ids[t] < 0 || batch.type_ids[t] >= c.type_vocab_size))
      throw Error("token " + std::to_string(t) + ": token type " + std::to_string(batch.type_ids[t]) +
                  " is out of range");
  }
}

// Index of the first NaN or infinite value of v, or v.size(): kernels::any_non_finite per block of
// 1024 values, the index found only in a block that has one.
size_t first_non_finite(std::span<const float> v) {
  constexpr size_t kBlock = 1024;
  for (size_t i0 = 0; i0 < v.size(); i0 += kBlock) {
    const size_t i1 = std::min(v.size(), i0 + kBlock);
    if (kernels::any_non_finite(v.data() + i0, i1 - i0))
      for (size_t i = i0; i < i1; ++i)
        if (!std::isfinite(v[i])) return i;
  }
  return v.size();
}

}  // namespace

// A NaN or an infinity in the outputs (a checkpoint holding one, an overflow) is said once per
// loaded model (roberta::warn), with the checkpoint's tensors that hold such values; the outputs
// are returned as computed, as PyTorch returns them.
void Model::Impl::check_outputs(const Batch& batch, const Outputs& out) const {
  if (warned_non_finite.load(std::memory_order_relaxed)) return;
  std::string where;
  const size_t row = first_non_finite(out.last_hidden_state.data) / std::max<size_t>(out.last_hidden_state.cols, 1);
  if (row < out.last_hidden_state.rows) {
    const size_t b = static_cast<size_t>(std::upper_bound(batch.offsets.begin(), batch.offsets.end(), row) -
                                         batch.offsets.begin()) - 1;
    where = "the last hidden state, first at sequence " + std::to_string(b) + " token " +
            std::to_string(row - batch.offsets[b]);
  } else {
    // With a finite hidden state, a head's output is not finite through its weights, which make
    // the same columns non-finite in every row: the first row tells (a row of logits, not all
    // T x 50265 of them).
    const auto first_row = [](const Matrix& m) { return std::span<const float>(m.data).first(m.cols * (m.rows > 0)); };
    const std::pair<const char*, std::span<const float>> heads[] = {
        {"the MLM logits", first_row(out.logits)},
        {"the pooler output", first_row(out.pooler_output)},
        {"the sequence logits", first_row(out.sequence_logits)},
        {"the token logits", first_row(out.token_logits)},
        {"the start logits", out.start_logits},
        {"the end logits", out.end_logits}};
    for (const auto& [name, values] : heads)
      if (first_non_finite(values) < values.size()) {
        where = name;
        break;
      }
  }
  if (where.empty() || warned_non_finite.exchange(true)) return;
  warn(dir.string() + ": the model's outputs hold NaN or infinite values (" + where + "): " +
       weights.non_finite_summary() + " (said once per loaded model)");
}

Outputs Model::forward(const Batch& batch, const ForwardOptions& options) const {
  const Impl& m = *impl_;
  const ModelConfig& c = m.config;
  check_batch(batch, c);
  const size_t T = batch.num_tokens();
  if (options.logits) require_head(Head::kMaskedLm, "so it cannot compute MLM logits");
  if (options.pooler) require_head(Head::kPooler, "so it cannot compute pooler_output");
  if (options.sequence_logits) require_head(Head::kSequenceClassification, "so it cannot classify sequences");
  if (options.token_logits) require_head(Head::kTokenClassification, "so it cannot classify tokens");
  if (options.span_logits) require_head(Head::kQuestionAnswering, "so it cannot answer questions");
  for (size_t r : options.logit_rows)
    if (r >= T) throw Error("logit row " + std::to_string(r) + " is outside the batch's " + std::to_string(T) + " tokens");

  const auto H = static_cast<size_t>(c.hidden_size);
  ForwardWorkspace workspace(m.layers, c, T);
  LayerWorkspace& ws = workspace.ws();

  Outputs out;
  Matrix x(T, H);
  embeddings_forward(x, m.embeddings, batch, c);
  if (options.all_hidden_states) out.hidden_states.push_back(x);
  for (size_t i = 0; i < m.layers.size(); ++i) {
    encoder_layer_forward(x, m.layers[i], batch, c, ws, i + 1 < m.layers.size());
    if (options.all_hidden_states) out.hidden_states.push_back(x);
  }
  // roberta-prelayernorm normalises the encoder's output; its hidden_states keep the value before.
  if (m.final_norm)
    kernels::layer_norm(x.data.data(), x.data.data(), nullptr, m.final_norm->gamma, m.final_norm->beta, T, H,
                        c.layer_norm_eps);
  if (options.logits) {
    std::vector<size_t> rows = options.logit_rows;
    if (rows.empty()) {
      rows.resize(T);
      std::iota(rows.begin(), rows.end(), size_t{0});
    }
    if (!options.logits_in_chunks) {
      out.logits = lm_head_forward(*m.lm_head, x, rows, c);
    } else {
      // A chunk of rows a few times the GEMM's own row chunk: the decoder's weights are read once
      // per GEMM row chunk either way, and each row's logits do not depend on the other rows.
      constexpr size_t kChunk = 256;
      for (size_t r0 = 0; r0 < rows.size(); r0 += kChunk) {
        const std::vector<size_t> chunk(rows.begin() + static_cast<ptrdiff_t>(r0),
                                        rows.begin() + static_cast<ptrdiff_t>(std::min(rows.size(), r0 + kChunk)));
        options.logits_in_chunks(r0, lm_head_forward(*m.lm_head, x, chunk, c));
      }
    }
  }
  if (options.pooler) out.pooler_output = pooler_forward(*m.pooler, x, batch);
  if (options.sequence_logits) out.sequence_logits = sequence_classifier_forward(*m.sequence_classifier, x, batch);
  if (options.token_logits) out.token_logits = token_linear_forward(*m.token_classifier, x);
  if (options.span_logits) {
    const Matrix span = token_linear_forward(*m.qa_outputs, x);  // (T, 2): start, end
    out.start_logits.resize(T), out.end_logits.resize(T);
    for (size_t t = 0; t < T; ++t) out.start_logits[t] = span.row(t)[0], out.end_logits[t] = span.row(t)[1];
  }
  out.last_hidden_state = std::move(x);
  m.check_outputs(batch, out);
  return out;
}

}  // namespace roberta
