#include "roberta/pipelines.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "roberta/error.h"

namespace roberta {

std::string clean_up_tokenization_spaces(std::string text) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
      {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    const std::string f = from, t = to;
    for (size_t pos = 0; (pos = text.find(f, pos)) != std::string::npos; pos += t.size()) text.replace(pos, f.size(), t);
  }
  return text;
}

// ---------------------------------------------------------------- fill-mask

FillMask::FillMask(Model model, Tokenizer tokenizer) : model_(std::move(model)), tokenizer_(std::move(tokenizer)) {}

FillMask FillMask::load(const std::filesystem::path& dir, const LoadOptions& options) {
  Model model = Model::load(dir, options);
  Tokenizer tokenizer = Tokenizer::from_dir(dir);
  if (!model.has_lm_head())
    throw Error(dir.string() + ": the model has no MLM head (no lm_head.* tensors), so it cannot fill masks");
  if (!tokenizer.mask_id()) throw Error(dir.string() + ": the tokenizer has no <mask> token");
  return FillMask(std::move(model), std::move(tokenizer));
}

std::vector<int32_t> FillMask::target_ids(const std::vector<std::string>& targets,
                                          std::vector<std::string>* notes) const {
  std::vector<int32_t> ids;
  for (const std::string& target : targets) {
    if (auto id = tokenizer_.token_to_id(target)) {
      ids.push_back(*id);
      continue;
    }
    EncodeOptions no_specials;
    no_specials.add_special_tokens = false;
    const Encoding e = tokenizer_.encode(target, no_specials);
    if (e.ids.empty()) {
      if (notes) notes->push_back("target \"" + target + "\" gives no token; ignored");
      continue;
    }
    if (notes)
      notes->push_back("target \"" + target + "\" is not one token of the vocabulary; using \"" +
                       tokenizer_.id_to_token(e.ids[0]) + "\"");
    ids.push_back(e.ids[0]);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::vector<std::vector<FillMaskCandidate>> FillMask::operator()(std::string_view text,
                                                                 const FillMaskOptions& options) const {
  const Encoding enc = tokenizer_.encode(text);
  const int32_t mask = *tokenizer_.mask_id();
  std::vector<size_t> mask_rows;
  for (size_t i = 0; i < enc.ids.size(); ++i)
    if (enc.ids[i] == mask) mask_rows.push_back(i);
  if (mask_rows.empty()) throw Error("no <mask> in the text");
  const int64_t max_len = model_.config().max_sequence_length();
  if (static_cast<int64_t>(enc.size()) > max_len)
    throw Error("the text has " + std::to_string(enc.size()) + " tokens; the model allows at most " +
                std::to_string(max_len));
  Batch batch;
  batch.add_sequence(enc.ids);
  ForwardOptions fo;
  fo.logits = true;
  fo.logit_rows = mask_rows;
  const Outputs out = model_.forward(batch, fo);

  std::vector<int32_t> allowed;
  if (!options.targets.empty()) {
    allowed = target_ids(options.targets, nullptr);
    if (allowed.empty()) throw Error("none of the targets is a token of the vocabulary");
  }
  const bool single_mask = mask_rows.size() == 1;
  const size_t V = out.logits.cols;
  std::vector<std::vector<FillMaskCandidate>> results;
  for (size_t m = 0; m < mask_rows.size(); ++m) {
    const float* logits = out.logits.row(m);
    // softmax over the whole vocabulary, in double for the normaliser
    const float max = *std::max_element(logits, logits + V);
    double sum = 0;
    for (size_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits[v]) - max);
    std::vector<int32_t> candidates = allowed;
    if (candidates.empty()) {
      candidates.resize(V);
      std::iota(candidates.begin(), candidates.end(), 0);
    }
    const size_t k = std::min(options.top_k, candidates.size());
    // Highest logit first; ties by lower id (as torch.topk gives on CPU for equal values).
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<ptrdiff_t>(k), candidates.end(),
                      [&](int32_t a, int32_t b) { return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; });
    std::vector<FillMaskCandidate> list;
    for (size_t i = 0; i < k; ++i) {
      FillMaskCandidate c;
      c.token = candidates[i];
      c.score = static_cast<float>(std::exp(static_cast<double>(logits[c.token]) - max) / sum);
      const int32_t one[1] = {c.token};
      c.token_str = clean_up_tokenization_spaces(tokenizer_.decode(one));
      std::vector<int32_t> filled = enc.ids;
      filled[mask_rows[m]] = c.token;
      c.sequence = clean_up_tokenization_spaces(tokenizer_.decode(filled, single_mask));
      list.push_back(std::move(c));
    }
    results.push_back(std::move(list));
  }
  return results;
}

// ---------------------------------------------------------------- embeddings

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

Embedder::Embedder(Model model, Tokenizer tokenizer, Pooling default_pooling, bool default_normalize)
    : model_(std::move(model)), tokenizer_(std::move(tokenizer)), pooling_(default_pooling), normalize_(default_normalize) {}

Embedder Embedder::load(const std::filesystem::path& dir, const LoadOptions& options) {
  Pooling pooling = Pooling::kMean;
  bool normalize = false;
  const auto read_json = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    try {
      return nlohmann::json::parse(ss.str());
    } catch (const nlohmann::json::exception& e) {
      throw Error(p.string() + ": invalid JSON: " + e.what());
    }
  };
  std::error_code ec;
  if (std::filesystem::exists(dir / "1_Pooling" / "config.json", ec)) {
    const auto cfg = read_json(dir / "1_Pooling" / "config.json");
    const auto on = [&](const char* key) { return cfg.contains(key) && cfg[key].is_boolean() && cfg[key].get<bool>(); };
    if (on("pooling_mode_cls_token"))
      pooling = Pooling::kCls;
    else if (on("pooling_mode_max_tokens"))
      pooling = Pooling::kMax;
    else if (on("pooling_mode_mean_tokens"))
      pooling = Pooling::kMean;
    else
      throw Error((dir / "1_Pooling" / "config.json").string() +
                  ": no supported pooling mode set (pooling_mode_cls_token, _mean_tokens or _max_tokens)");
  }
  if (std::filesystem::exists(dir / "modules.json", ec)) {
    const auto modules = read_json(dir / "modules.json");
    if (modules.is_array())
      for (const auto& m : modules)
        if (m.is_object() && m.contains("type") && m["type"].is_string() &&
            m["type"].get<std::string>().ends_with("models.Normalize"))
          normalize = true;
  }
  return Embedder(Model::load(dir, options), Tokenizer::from_dir(dir), pooling, normalize);
}

Matrix Embedder::operator()(std::span<const std::string> texts, const EmbedOptions& options,
                            std::vector<size_t>* truncated) const {
  const Pooling pooling = options.pooling.value_or(pooling_);
  const bool normalize = options.normalize.value_or(normalize_);
  if (pooling == Pooling::kPooler && !model_.has_pooler())
    throw Error(model_.dir().string() + ": the model has no pooler (pooler.dense.*), so --pooling pooler is unavailable");
  const size_t model_max = static_cast<size_t>(model_.config().max_sequence_length());
  const size_t max_len = options.max_length ? std::min(options.max_length, model_max) : model_max;
  const size_t H = static_cast<size_t>(model_.config().hidden_size);

  std::vector<std::vector<int32_t>> ids(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    Encoding e;
    try {
      e = tokenizer_.encode(texts[i]);
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
