#include "roberta/embedder.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lowercase.h"
#include "roberta/error.h"
#include "util/files.h"

namespace roberta {

Pooling parse_pooling(const std::string& name) {
  if (name == "mean") return Pooling::kMean;
  if (name == "cls") return Pooling::kCls;
  if (name == "max") return Pooling::kMax;
  if (name == "pooler") return Pooling::kPooler;
  throw Error("pooling \"" + name + "\" is not one of mean, cls, max, pooler");
}

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kMax: return "max";
    case Pooling::kPooler: return "pooler";
  }
  return "?";
}


SentenceTransformerConfig SentenceTransformerConfig::from_dir(const std::filesystem::path& dir) {
  SentenceTransformerConfig c;
  std::error_code ec;
  const auto pooling_file = dir / "1_Pooling" / "config.json";
  if (std::filesystem::exists(pooling_file, ec)) {
    const auto cfg = util::read_json_file(pooling_file);
    const auto on = [&](const char* key) { return cfg.contains(key) && cfg[key].is_boolean() && cfg[key].get<bool>(); };
    if (on("pooling_mode_cls_token"))
      c.pooling = Pooling::kCls;
    else if (on("pooling_mode_max_tokens"))
      c.pooling = Pooling::kMax;
    else if (on("pooling_mode_mean_tokens"))
      c.pooling = Pooling::kMean;
    else
      throw Error(pooling_file.string() + ": no supported pooling mode set (pooling_mode_cls_token, _mean_tokens or "
                                          "_max_tokens)",
                  ErrorKind::kInvalidModel);
  }
  if (std::filesystem::exists(dir / "modules.json", ec)) {
    const auto modules = util::read_json_file(dir / "modules.json");
    if (modules.is_array())
      for (const auto& m : modules)
        if (m.is_object() && m.contains("type") && m["type"].is_string() &&
            m["type"].get<std::string>().ends_with("models.Normalize"))
          c.normalize = true;
  }
  const auto sbert_file = dir / "sentence_bert_config.json";
  if (std::filesystem::exists(sbert_file, ec)) {
    const auto cfg = util::read_json_file(sbert_file);
    if (!cfg.is_object()) throw Error(sbert_file.string() + ": expected a JSON object", ErrorKind::kInvalidModel);
    if (cfg.contains("max_seq_length") && !cfg["max_seq_length"].is_null()) {
      const auto& v = cfg["max_seq_length"];
      if (!v.is_number_integer() || v.get<int64_t>() < 3)
        throw Error(sbert_file.string() + ": field \"max_seq_length\" must be an integer of at least 3, got " + v.dump(),
                    ErrorKind::kInvalidModel);
      c.max_seq_length = v.get<size_t>();
    }
    if (cfg.contains("do_lower_case")) {
      if (!cfg["do_lower_case"].is_boolean())
        throw Error(sbert_file.string() + ": field \"do_lower_case\" must be true or false", ErrorKind::kInvalidModel);
      c.do_lower_case = cfg["do_lower_case"].get<bool>();
    }
  }
  return c;
}

Embedder::Embedder(Model model, Tokenizer tokenizer, SentenceTransformerConfig config)
    : model_(std::move(model)), tokenizer_(std::move(tokenizer)), config_(config) {}

Embedder Embedder::load(const std::filesystem::path& dir, const LoadOptions& options) {
  SentenceTransformerConfig config = SentenceTransformerConfig::from_dir(dir);
  return Embedder(Model::load(dir, options), Tokenizer::from_dir(dir), config);
}

size_t Embedder::max_seq_length() const {
  const auto model_max = static_cast<size_t>(model_.config().max_sequence_length());
  return config_.max_seq_length ? std::min(config_.max_seq_length, model_max) : model_max;
}

Matrix Embedder::operator()(std::span<const std::string> texts, const EmbedOptions& options,
                            std::vector<size_t>* truncated) const {
  const Pooling pooling = options.pooling.value_or(config_.pooling);
  const bool normalize = options.normalize.value_or(config_.normalize);
  if (pooling == Pooling::kPooler && !model_.has_pooler())
    throw Error(model_.dir().string() + ": the model has no pooler (pooler.dense.*), so --pooling pooler is unavailable");
  const size_t model_max = static_cast<size_t>(model_.config().max_sequence_length());
  const size_t max_len = options.max_length ? std::min(options.max_length, model_max) : max_seq_length();
  const size_t H = static_cast<size_t>(model_.config().hidden_size);

  std::vector<std::vector<int32_t>> ids(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    Encoding e;
    try {
      e = config_.do_lower_case ? tokenizer_.encode(lowercase(texts[i])) : tokenizer_.encode(texts[i]);
    } catch (const Error& err) {
      throw Error(options.input_label + " " + std::to_string(options.first_index + i) + ": " + err.what());
    }
    if (e.size() > max_len) {
      if (!options.truncate)
        throw Error(options.input_label + " " + std::to_string(options.first_index + i) + ": " +
                    std::to_string(e.size()) + " tokens, more than the " +
                    std::to_string(max_len) + " allowed");
      e.ids.resize(max_len - 1);
      e.ids.push_back(tokenizer_.eos_id());
      if (truncated) truncated->push_back(i);
    }
    ids[i] = std::move(e.ids);
  }
  // Longest first, so that batches hold texts of similar length.
  std::vector<size_t> order(texts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a].size() > ids[b].size(); });

  Matrix result(texts.size(), H);
  const size_t batch_size = std::max<size_t>(1, options.batch_size);
  for (size_t start = 0; start < order.size(); start += batch_size) {
    const size_t end = std::min(order.size(), start + batch_size);
    Batch batch;
    for (size_t i = start; i < end; ++i) batch.add_sequence(ids[order[i]]);
    ForwardOptions fo;
    fo.pooler = pooling == Pooling::kPooler;
    const Outputs out = model_.forward(batch, fo);
    for (size_t i = start; i < end; ++i) {
      const size_t b = i - start;
      float* dst = result.row(order[i]);
      const size_t t0 = batch.offsets[b], t1 = batch.offsets[b + 1];
      switch (pooling) {
        case Pooling::kCls:
          std::copy_n(out.last_hidden_state.row(t0), H, dst);
          break;
        case Pooling::kPooler:
          std::copy_n(out.pooler_output.row(b), H, dst);
          break;
        case Pooling::kMean: {
          std::vector<double> sum(H, 0.0);
          for (size_t t = t0; t < t1; ++t)
            for (size_t h = 0; h < H; ++h) sum[h] += out.last_hidden_state.row(t)[h];
          for (size_t h = 0; h < H; ++h) dst[h] = static_cast<float>(sum[h] / static_cast<double>(t1 - t0));
          break;
        }
        case Pooling::kMax:
          std::copy_n(out.last_hidden_state.row(t0), H, dst);
          for (size_t t = t0 + 1; t < t1; ++t)
            for (size_t h = 0; h < H; ++h) dst[h] = std::max(dst[h], out.last_hidden_state.row(t)[h]);
          break;
      }
      if (normalize) {
        double norm = 0;
        for (size_t h = 0; h < H; ++h) norm += static_cast<double>(dst[h]) * dst[h];
        const float inv = static_cast<float>(1.0 / std::max(std::sqrt(norm), 1e-12));
        for (size_t h = 0; h < H; ++h) dst[h] *= inv;
      }
    }
  }
  return result;
}

}  // namespace roberta
