#include "roberta/embedder.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "kernels/activations.h"
#include "tokenizer/lowercase.h"
#include "pipelines/pipeline_util.h"
#include "roberta/dev/weights.h"
#include "roberta/error.h"
#include "tokenizer/unicode.h"
#include "util/files.h"

namespace roberta {

Pooling parse_pooling(const std::string& name) {
  if (name == "mean") return Pooling::kMean;
  if (name == "cls") return Pooling::kCls;
  if (name == "max") return Pooling::kMax;
  if (name == "pooler") return Pooling::kPooler;
  if (name == "mean_sqrt_len" || name == "mean_sqrt_len_tokens") return Pooling::kMeanSqrtLen;
  if (name == "weightedmean") return Pooling::kWeightedMean;
  if (name == "lasttoken") return Pooling::kLastToken;
  throw Error("pooling \"" + name + "\" is not one of mean, cls, max, pooler, mean_sqrt_len, weightedmean, lasttoken");
}

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kMax: return "max";
    case Pooling::kPooler: return "pooler";
    case Pooling::kMeanSqrtLen: return "mean_sqrt_len";
    case Pooling::kWeightedMean: return "weightedmean";
    case Pooling::kLastToken: return "lasttoken";
  }
  return "?";
}


namespace {

// Activations sentence-transformers' Dense modules are saved with (torch class paths).
kernels::Activation dense_activation(const std::string& name, const std::string& where) {
  using kernels::Activation;
  static const std::pair<const char*, Activation> kNames[] = {
      {"torch.nn.modules.activation.Tanh", Activation::kTanh},   {"torch.nn.modules.linear.Identity", Activation::kLinear},
      {"torch.nn.modules.activation.ReLU", Activation::kRelu},   {"torch.nn.modules.activation.GELU", Activation::kGelu},
      {"torch.nn.modules.activation.Sigmoid", Activation::kSigmoid}, {"torch.nn.modules.activation.SiLU", Activation::kSilu}};
  for (const auto& [n, a] : kNames)
    if (name == n) return a;
  throw Error(where + ": activation_function \"" + name +
                  "\" is not supported (Tanh, Identity, ReLU, GELU, Sigmoid, SiLU)",
              ErrorKind::kInvalidModel);
}

// A Dense module folder: config.json and model.safetensors (linear.weight, linear.bias).
DenseLayer read_dense(const std::filesystem::path& dir) {
  const auto cfg_path = dir / "config.json";
  const auto cfg = util::read_json_file(cfg_path);
  DenseLayer d;
  const auto size = [&](const char* key) {
    if (!cfg.contains(key) || !cfg[key].is_number_integer() || cfg[key].get<int64_t>() < 1)
      throw Error(cfg_path.string() + ": field \"" + key + "\" must be a positive integer", ErrorKind::kInvalidModel);
    return cfg[key].get<size_t>();
  };
  d.in = size("in_features");
  d.out = size("out_features");
  d.activation = cfg.value("activation_function", std::string("torch.nn.modules.activation.Tanh"));
  dense_activation(d.activation, cfg_path.string());
  const bool bias = cfg.value("bias", true);
  std::error_code ec;
  if (!std::filesystem::exists(dir / "model.safetensors", ec))
    throw Error(dir.string() + ": no model.safetensors found (convert pytorch_model.bin with tools/convert_checkpoint.py)",
                ErrorKind::kIo);
  const WeightStore store = WeightStore::open_file(dir / "model.safetensors");
  const auto get = [&](const std::string& name, std::vector<int64_t> shape) {
    const TensorInfo* t = store.find(name);
    if (!t) throw Error((dir / "model.safetensors").string() + ": tensor \"" + name + "\" is missing", ErrorKind::kInvalidModel);
    if (t->shape != shape)
      throw Error((dir / "model.safetensors").string() + ": tensor \"" + name + "\" does not have the shape config.json implies",
                  ErrorKind::kInvalidModel);
    return store.to_float(*t);
  };
  d.weight = get("linear.weight", {static_cast<int64_t>(d.out), static_cast<int64_t>(d.in)});
  if (bias) d.bias = get("linear.bias", {static_cast<int64_t>(d.out)});
  return d;
}

// activation(W x + b) in fp32 with double sums.
std::vector<float> dense_forward(const DenseLayer& d, const std::vector<float>& x) {
  std::vector<float> y(d.out);
  const kernels::Activation act = dense_activation(d.activation, "Dense");
  for (size_t o = 0; o < d.out; ++o) {
    double sum = 0;
    const float* w = d.weight.data() + o * d.in;
    for (size_t i = 0; i < d.in; ++i) sum += static_cast<double>(w[i]) * x[i];
    const float z = static_cast<float>(sum) + (d.bias.empty() ? 0.0f : d.bias[o]);
    y[o] = kernels::activate(act, z);
  }
  return y;
}

}  // namespace

namespace {

// A Pooling module's config.json, read as sentence-transformers' Pooling(**config) takes it: the
// pooling_mode string, else the pooling_mode_* flags with their defaults (mean on, the others off).
// Several modes give their vectors one after another, in the order sentence-transformers uses.
void read_pooling(const std::filesystem::path& file, SentenceTransformerConfig& c) {
  const std::string where = file.string();
  const auto cfg = util::read_json_file(file);
  if (!cfg.is_object()) throw Error(where + ": expected a JSON object", ErrorKind::kInvalidModel);
  struct Mode {
    const char* name;  // Pooling's POOLING_MODES
    const char* key;
    Pooling pooling;
  };
  static const Mode kModes[] = {  // in the order Pooling.forward concatenates them
      {"cls", "pooling_mode_cls_token", Pooling::kCls},
      {"max", "pooling_mode_max_tokens", Pooling::kMax},
      {"mean", "pooling_mode_mean_tokens", Pooling::kMean},
      {"mean_sqrt_len_tokens", "pooling_mode_mean_sqrt_len_tokens", Pooling::kMeanSqrtLen},
      {"weightedmean", "pooling_mode_weightedmean_tokens", Pooling::kWeightedMean},
      {"lasttoken", "pooling_mode_lasttoken", Pooling::kLastToken}};
  c.pooling_modes.clear();
  if (cfg.contains("pooling_mode") && !cfg["pooling_mode"].is_null()) {
    if (!cfg["pooling_mode"].is_string())
      throw Error(where + ": field \"pooling_mode\" must be a string", ErrorKind::kInvalidModel);
    std::string mode = cfg["pooling_mode"];
    for (char& ch : mode) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const auto it = std::find_if(std::begin(kModes), std::end(kModes), [&](const Mode& m) { return mode == m.name; });
    if (it == std::end(kModes))
      throw Error(where + ": pooling_mode \"" + cfg["pooling_mode"].get<std::string>() +
                      "\" is not one of cls, lasttoken, max, mean, mean_sqrt_len_tokens, weightedmean",
                  ErrorKind::kInvalidModel);
    c.pooling_modes.push_back(it->pooling);
  } else {
    for (const Mode& m : kModes) {
      bool value = m.pooling == Pooling::kMean;
      if (cfg.contains(m.key) && !cfg[m.key].is_null()) {
        if (!cfg[m.key].is_boolean())
          throw Error(where + ": field \"" + m.key + "\" must be true or false", ErrorKind::kInvalidModel);
        value = cfg[m.key].get<bool>();
      }
      if (value) c.pooling_modes.push_back(m.pooling);
    }
  }
  if (c.pooling_modes.empty()) throw Error(where + ": no pooling mode is set", ErrorKind::kInvalidModel);
  c.pooling = c.pooling_modes.front();
  if (cfg.contains("include_prompt") && cfg["include_prompt"].is_boolean()) c.include_prompt = cfg["include_prompt"];
}

}  // namespace

SentenceTransformerConfig SentenceTransformerConfig::from_dir(const std::filesystem::path& dir) {
  SentenceTransformerConfig c;
  // modules.json lists the modules sentence-transformers runs, in order: Transformer, then Pooling
  // (its config in the module's folder), then Dense and Normalize modules. Others are refused: a
  // model that needs them would give other embeddings than sentence-transformers does.
  std::error_code ec;
  const auto modules_file = dir / "modules.json";
  std::optional<std::filesystem::path> pooling_file;
  if (std::filesystem::exists(modules_file, ec)) {
    const std::string where = modules_file.string();
    const auto modules = util::read_json_file(modules_file);
    if (!modules.is_array()) throw Error(where + ": expected a JSON array of modules", ErrorKind::kInvalidModel);
    for (size_t i = 0; i < modules.size(); ++i) {
      const auto& m = modules[i];
      const std::string at = where + ": module " + std::to_string(i);
      if (!m.is_object() || !m.contains("type") || !m["type"].is_string())
        throw Error(at + " has no \"type\"", ErrorKind::kInvalidModel);
      const std::string type = m["type"];
      if (m.contains("path") && !m["path"].is_string())
        throw Error(at + " (" + type + "): \"path\" must be a string", ErrorKind::kInvalidModel);
      const std::string path = m.value("path", std::string());
      std::string name = type;
      for (const std::string prefix : {"sentence_transformers.models.", "sentence_transformers.sparse_encoder.models."})
        if (name.starts_with(prefix)) name = name.substr(prefix.size());
      const auto out_of_order = [&](const char* what) {
        return Error(at + " (" + type + ") " + what, ErrorKind::kInvalidModel);
      };
      if (name == "Transformer" || name == "MLMTransformer") {
        if (i != 0) throw out_of_order("must come first");
      } else if (name == "SpladePooling") {
        if (pooling_file || c.splade || !c.dense.empty() || c.normalize)
          throw out_of_order("with another pooling, Dense or Normalize module: not supported");
        c.splade = SpladePoolingConfig::from_file(dir / path / "config.json");
      } else if (c.splade && name != "Dropout") {
        throw out_of_order("after SpladePooling: not supported");
      } else if (name == "Pooling") {
        if (pooling_file) throw out_of_order("is a second Pooling module");
        pooling_file = dir / path / "config.json";
      } else if (name == "Dense") {
        if (!pooling_file) throw out_of_order("comes before the Pooling module: not supported");
        if (c.normalize) throw out_of_order("comes after a Normalize module: not supported");
        if (path.empty()) throw Error(at + ": a Dense module without a \"path\"", ErrorKind::kInvalidModel);
        c.dense.push_back(read_dense(dir / path));
      } else if (name == "Normalize") {
        if (!pooling_file) throw out_of_order("comes before the Pooling module: not supported");
        c.normalize = true;
      } else if (name != "Dropout") {  // Dropout does nothing at inference
        throw Error(at + ": module type \"" + type +
                        "\" is not supported (sentence_transformers.models Transformer, Pooling, Dense, Normalize, "
                        "Dropout; sentence_transformers.sparse_encoder.models MLMTransformer, SpladePooling)",
                    ErrorKind::kInvalidModel);
      }
    }
  } else {
    // Without modules.json sentence-transformers builds Transformer + mean pooling from the model
    // alone (SentenceTransformer._load_auto_model): none of its other files is read.
    return c;
  }
  if (pooling_file) read_pooling(*pooling_file, c);
  const auto st_file = dir / "config_sentence_transformers.json";
  if (std::filesystem::exists(st_file, ec)) {
    const auto cfg = util::read_json_file(st_file);
    if (cfg.contains("prompts") && cfg["prompts"].is_object())
      for (const auto& [name, text] : cfg["prompts"].items()) {
        if (!text.is_string())
          throw Error(st_file.string() + ": prompts[\"" + name + "\"] must be a string", ErrorKind::kInvalidModel);
        c.prompts[name] = text.get<std::string>();
      }
    if (cfg.contains("default_prompt_name") && cfg["default_prompt_name"].is_string()) {
      c.default_prompt_name = cfg["default_prompt_name"];
      if (!c.prompts.count(c.default_prompt_name))
        throw Error(st_file.string() + ": default_prompt_name \"" + c.default_prompt_name + "\" is not in prompts",
                    ErrorKind::kInvalidModel);
    }
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
    : model_(std::move(model)), tokenizer_(std::move(tokenizer)), config_(std::move(config)) {
  if (config_.pooling_modes.empty()) config_.pooling_modes = {config_.pooling};
  size_t dim = static_cast<size_t>(model_.config().hidden_size) * config_.pooling_modes.size();
  for (const DenseLayer& d : config_.dense) {
    if (d.in != dim)
      throw Error(model_.dir().string() + ": a Dense module takes " + std::to_string(d.in) + " inputs but receives " +
                      std::to_string(dim),
                  ErrorKind::kInvalidModel);
    dim = d.out;
  }
}

size_t Embedder::dimension() const { return dimension(EmbedOptions{}); }

size_t Embedder::dimension(const EmbedOptions& options) const {
  const size_t modes = options.pooling ? 1 : config_.pooling_modes.size();
  const size_t pooled = static_cast<size_t>(model_.config().hidden_size) * modes;
  if (config_.dense.empty()) return pooled;
  if (pooled != config_.dense.front().in)
    throw Error("pooling " + std::string(pooling_name(*options.pooling)) + " gives " + std::to_string(pooled) +
                " values but the model's Dense module takes " + std::to_string(config_.dense.front().in) +
                " (the folder's pooling concatenates " + std::to_string(config_.pooling_modes.size()) + " modes)");
  return config_.dense.back().out;
}

Embedder Embedder::load(const std::filesystem::path& dir, const LoadOptions& options) {
  SentenceTransformerConfig config = SentenceTransformerConfig::from_dir(dir);
  auto [model, tokenizer] = pipeline::load_model_and_tokenizer(dir, options);
  return Embedder(std::move(model), std::move(tokenizer), config);
}

size_t Embedder::max_seq_length() const {
  // sentence-transformers: sentence_bert_config.json's max_seq_length, else the smaller of the
  // positions and the tokenizer's model_max_length.
  const auto model_max = static_cast<size_t>(model_.config().max_sequence_length());
  return config_.max_seq_length ? std::min(config_.max_seq_length, model_max)
                                : pipeline::truncation_length(model_.config(), tokenizer_);
}

std::string Embedder::prompt_for(const EmbedOptions& options) const {
  // As sentence-transformers' encode picks it: prompt, else prompt_name, else the default.
  if (options.prompt) return *options.prompt;
  if (!options.prompt_name && config_.default_prompt_name.empty()) return "";
  const std::string name = options.prompt_name.value_or(config_.default_prompt_name);
  const auto it = config_.prompts.find(name);
  if (it == config_.prompts.end()) {
    std::string known;
    for (const auto& [n, _] : config_.prompts) known += (known.empty() ? "" : ", ") + n;
    throw Error("prompt name \"" + name + "\" is not one of the model's prompts (" + (known.empty() ? "none" : known) +
                ")");
  }
  return it->second;
}

size_t Embedder::max_tokens(const EmbedOptions& options) const {
  const auto model_max = static_cast<size_t>(model_.config().max_sequence_length());
  return options.max_length ? std::min(options.max_length, model_max) : max_seq_length();
}

PreparedText Embedder::prepare(std::string_view text, const EmbedOptions& options) const {
  const std::string prompt = prompt_for(options);
  // What sentence-transformers' Transformer.tokenize makes of a text: str(s).strip(), then lower()
  // (invalid UTF-8 is left whole, for the tokenizer's error to name its byte in the text as given).
  const auto as_tokenized = [&](std::string s) {
    if (options.strip && !unicode::find_invalid_utf8(s)) s = pipeline::python_strip(s);
    return config_.do_lower_case ? lowercase(s) : s;
  };
  PreparedText p;
  // Tokens of the prompt that pooling leaves out (include_prompt false): sentence-transformers
  // counts the prompt's tokenization (stripped as every text) minus its final </s>, so <s> is left
  // out too.
  if (!prompt.empty() && !config_.include_prompt) p.pooling_start = tokenizer_.encode(as_tokenized(prompt)).size() - 1;
  std::string full = prompt;
  full += text;
  Encoding e = tokenizer_.encode(as_tokenized(std::move(full)));
  p.ids = std::move(e.ids);
  fit_length(p, options);
  return p;
}

PreparedText Embedder::prepare_ids(std::span<const int32_t> ids, const EmbedOptions& options) const {
  const int64_t vocab = model_.config().vocab_size;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      throw Error("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                  " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  PreparedText p;
  const std::string prompt = prompt_for(options);
  if (prompt.empty()) {
    p.ids.push_back(tokenizer_.bos_id());
  } else {
    // <s> prompt without its </s>, the prompt tokenized as given (the server's form: ids come
    // without the text they would be stripped with).
    p.ids = tokenizer_.encode(config_.do_lower_case ? lowercase(prompt) : prompt).ids;
    p.ids.pop_back();
    if (!config_.include_prompt) p.pooling_start = p.ids.size();
  }
  p.ids.insert(p.ids.end(), ids.begin(), ids.end());
  p.ids.push_back(tokenizer_.eos_id());
  fit_length(p, options);
  return p;
}

void Embedder::fit_length(PreparedText& p, const EmbedOptions& options) const {
  const size_t max_len = max_tokens(options);
  if (p.ids.size() <= max_len) return;
  if (!options.truncate)
    throw Error(std::to_string(p.ids.size()) + " tokens, more than the " + std::to_string(max_len) + " allowed");
  // <s> and </s> stay; the tokens between them are cut on the chosen side.
  if (options.truncation_side == Side::kLeft)
    p.ids.erase(p.ids.begin() + 1, p.ids.begin() + 1 + static_cast<ptrdiff_t>(p.ids.size() - max_len));
  else
    p.ids.resize(max_len - 1), p.ids.push_back(tokenizer_.eos_id());
  p.truncated = true;
}

void l2_normalize(std::span<float> v) {
  double norm = 0;
  for (float x : v) norm += static_cast<double>(x) * x;
  const float inv = static_cast<float>(1.0 / std::max(std::sqrt(norm), 1e-12));
  for (float& x : v) x *= inv;
}

Matrix Embedder::run(std::span<const PreparedText> texts, const EmbedOptions& options) const {
  if (config_.splade)
    throw Error(model_.dir().string() +
                    ": the folder is a sentence-transformers SparseEncoder (SpladePooling in modules.json): its "
                    "embeddings are sparse (roberta::SparseEncoder, `roberta embed --sparse`, the server's /embed_sparse)",
                ErrorKind::kInvalidModel);
  const std::vector<Pooling> modes = options.pooling ? std::vector<Pooling>{*options.pooling} : config_.pooling_modes;
  const bool pooler = std::find(modes.begin(), modes.end(), Pooling::kPooler) != modes.end();
  if (pooler && !model_.has_pooler())
    throw Error(model_.dir().string() + ": the model has no pooler (pooler.dense.*), so --pooling pooler is unavailable",
                ErrorKind::kInvalidModel);
  const size_t H = static_cast<size_t>(model_.config().hidden_size);
  Batch batch;
  for (const PreparedText& t : texts) batch.add_sequence(t.ids);
  ForwardOptions fo;
  fo.pooler = pooler;
  const Outputs out = model_.forward(batch, fo);
  Matrix result(texts.size(), dimension(options));
  std::vector<float> v;
  std::vector<double> sum(H);
  for (size_t b = 0; b < texts.size(); ++b) {
    const size_t t0 = batch.offsets[b], t1 = batch.offsets[b + 1];
    // Pooling over the tokens after the prompt (all of them when include_prompt); at least one.
    const size_t p0 = std::min(t0 + texts[b].pooling_start, t1 - 1);
    const auto row = [&](size_t t) { return out.last_hidden_state.row(t); };
    v.clear();
    for (const Pooling pooling : modes) {  // each mode's H values, one after another
      const size_t at = v.size();
      v.resize(at + H, 0.0f);
      float* p = v.data() + at;
      switch (pooling) {
        case Pooling::kCls:  // token 0, prompt or not (as sentence-transformers)
          std::copy_n(row(t0), H, p);
          break;
        case Pooling::kLastToken:  // the last token the mask keeps: </s>
          std::copy_n(row(t1 - 1), H, p);
          break;
        case Pooling::kPooler:
          std::copy_n(out.pooler_output.row(b), H, p);
          break;
        case Pooling::kMean:
        case Pooling::kMeanSqrtLen:
        case Pooling::kWeightedMean: {
          // weightedmean: token t weighs its position in the sequence, 1 for <s>
          const bool weighted = pooling == Pooling::kWeightedMean;
          std::fill(sum.begin(), sum.end(), 0.0);
          double weights = 0;
          for (size_t t = p0; t < t1; ++t) {
            const double w = weighted ? static_cast<double>(t - t0 + 1) : 1.0;
            weights += w;
            for (size_t h = 0; h < H; ++h) sum[h] += w * row(t)[h];
          }
          const double divisor = pooling == Pooling::kMeanSqrtLen ? std::sqrt(weights) : weights;
          for (size_t h = 0; h < H; ++h) p[h] = static_cast<float>(sum[h] / divisor);
          break;
        }
        case Pooling::kMax:
          std::copy_n(row(p0), H, p);
          for (size_t t = p0 + 1; t < t1; ++t)
            for (size_t h = 0; h < H; ++h) p[h] = std::max(p[h], row(t)[h]);
          break;
      }
    }
    v = after_pooling(std::move(v), options);
    std::copy_n(v.data(), v.size(), result.row(b));
  }
  return result;
}

std::vector<float> Embedder::after_pooling(std::vector<float> v, const EmbedOptions& options) const {
  for (const DenseLayer& d : config_.dense) v = dense_forward(d, v);
  if (options.normalize.value_or(config_.normalize)) l2_normalize(v);
  return v;
}

std::vector<Matrix> Embedder::run_tokens(std::span<const PreparedText> texts) const {
  Batch batch;
  for (const PreparedText& t : texts) batch.add_sequence(t.ids);
  const Outputs out = model_.forward(batch);
  const size_t H = out.last_hidden_state.cols;
  std::vector<Matrix> result;
  for (size_t b = 0; b < texts.size(); ++b) {
    Matrix m(batch.offsets[b + 1] - batch.offsets[b], H);
    std::copy_n(out.last_hidden_state.row(batch.offsets[b]), m.rows * H, m.data.data());
    result.push_back(std::move(m));
  }
  return result;
}

Matrix Embedder::operator()(std::span<const std::string> texts, const EmbedOptions& options,
                            std::vector<size_t>* truncated) const {
  Matrix result(texts.size(), dimension(options));
  pipeline::in_length_order(
      texts.size(), [&](size_t i) { return prepare(texts[i], options); }, options.batch_size, truncated,
      [&](std::span<const PreparedText> batch, std::span<const size_t> where) {
        const Matrix rows = run(batch, options);
        for (size_t i = 0; i < where.size(); ++i) std::copy_n(rows.row(i), rows.cols, result.row(where[i]));
      });
  return result;
}

}  // namespace roberta
