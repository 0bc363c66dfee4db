#pragma once
// Sentence embeddings as sentence-transformers computes them. Load once, call from any thread.
//
//   roberta::Embedder embed = roberta::Embedder::load("models/my-sentence-model");
//   roberta::Matrix e = embed(std::vector<std::string>{"first text", "second text"});  // (2, hidden)
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/model.h"
#include "roberta/tokenizer.h"

namespace roberta {

// sentence-transformers' pooling modes (mean_sqrt_len: the sum over sqrt(tokens); weightedmean:
// tokens weighted by their position 1, 2, ...; lasttoken: the last token, </s>) and the pooler.
enum class Pooling { kMean, kCls, kMax, kPooler, kMeanSqrtLen, kWeightedMean, kLastToken };
// "mean", "cls", "max", "pooler", "mean_sqrt_len", "weightedmean", "lasttoken"
Pooling parse_pooling(const std::string& name);
const char* pooling_name(Pooling p);

struct EmbedOptions {
  std::optional<Pooling> pooling{};    // default: the folder's sentence-transformers config, else mean
  std::optional<bool> normalize{};     // L2-normalise; default as above, else false
  size_t batch_size = 32;
  size_t max_length = 0;             // tokens incl. <s> </s>; 0: max_seq_length()
  bool truncate = true;              // false: an over-long text is an error
  Side truncation_side = Side::kRight;  // kLeft keeps the end of an over-long text (TEI's "Left")
  // A prompt put before every text, as sentence-transformers' encode(prompt=...) does; or the name
  // of one of the folder's prompts (config_sentence_transformers.json), as encode(prompt_name=...).
  // Neither: the folder's default_prompt_name, if it has one.
  std::optional<std::string> prompt{};
  std::optional<std::string> prompt_name{};
  // Whitespace at both ends of prompt + text is dropped (Python's str.strip), as sentence-transformers'
  // Transformer.tokenize drops it; the prompt's tokens left out by include_prompt false are counted
  // the same way. false: texts are tokenized as given (the server, as TEI).
  bool strip = true;
};

// A sentence-transformers Dense module (models.Dense): y = activation(W x + b).
struct DenseLayer {
  size_t in = 0, out = 0;
  std::vector<float> weight;  // (out, in)
  std::vector<float> bias;    // (out), empty without bias
  std::string activation{};     // torch's class path, e.g. "torch.nn.modules.activation.Tanh"
};

// sentence-transformers' SpladePooling (sparse_encoder.models): a SparseEncoder folder's pooling of
// the MLM logits into one weight per vocabulary entry, activation then log1p, then max or sum over
// the tokens (roberta/sparse_encoder.h).
struct SpladePoolingConfig {
  enum class Strategy { kMax, kSum };
  enum class Activation { kRelu, kLog1pRelu };  // log1p(relu(x)), or log1p(log1p(relu(x)))
  Strategy strategy = Strategy::kMax;
  Activation activation = Activation::kRelu;
  // Its config.json: pooling_strategy "max" | "sum", activation_function "relu" | "log1p_relu".
  // Errors name the file and field.
  static SpladePoolingConfig from_file(const std::filesystem::path& file);
};

// What a sentence-transformers folder configures; the defaults of an Embedder.
struct SentenceTransformerConfig {
  Pooling pooling = Pooling::kMean;  // the Pooling module's config.json (its path in modules.json)
  // Every mode that config sets, in the order sentence-transformers concatenates their vectors
  // (cls, max, mean, mean_sqrt_len, weightedmean, lasttoken); empty: `pooling` alone.
  std::vector<Pooling> pooling_modes{};
  bool normalize = false;            // a models.Normalize entry in modules.json
  size_t max_seq_length = 0;         // sentence_bert_config.json; 0: the model's maximum
  bool do_lower_case = false;        // sentence_bert_config.json: texts go through str.lower()
  bool include_prompt = true;        // 1_Pooling/config.json: false leaves the prompt's tokens out of pooling
  std::vector<DenseLayer> dense{};     // Dense modules after pooling, in modules.json order
  std::map<std::string, std::string> prompts{};  // config_sentence_transformers.json
  std::string default_prompt_name{};             // "" when none
  // A SparseEncoder folder (MLMTransformer + SpladePooling in modules.json): its pooling. Such a
  // folder gives sparse embeddings (SparseEncoder), not dense ones.
  std::optional<SpladePoolingConfig> splade{};

  // Reads the files of `dir` that exist (none: the defaults above); without modules.json, none of them
  // (sentence-transformers then builds Transformer + mean pooling from the model alone). Errors name
  // the file.
  static SentenceTransformerConfig from_dir(const std::filesystem::path& dir);
};

// One text tokenized for embedding (prompt added, lowercased, truncated): the prepare step.
struct PreparedText {
  std::vector<int32_t> ids{};
  size_t pooling_start = 0;  // leading tokens (a prompt) that pooling leaves out
  bool truncated = false;    // cut to the maximum length
};

// Scales v to unit L2 norm (a zero vector stays zero), with the sum in double: what
// EmbedOptions::normalize does to each row.
//   std::vector<float> v{3, 4};  roberta::l2_normalize(v);   // {0.6, 0.8}
void l2_normalize(std::span<float> v);

class Embedder {
 public:
  Embedder(Model model, Tokenizer tokenizer, SentenceTransformerConfig config = {});
  // Model, tokenizer and SentenceTransformerConfig::from_dir(dir).
  static Embedder load(const std::filesystem::path& dir, const LoadOptions& options = {});

  // One row per text, in input order. Texts are sorted by length into batches internally.
  // `truncated`, when given, receives the indices of texts that were cut to max_length. A bad
  // text's Error names it (Error::input(), what(): "input <i + 1>: ...").
  Matrix operator()(std::span<const std::string> texts, const EmbedOptions& options = {},
                    std::vector<size_t>* truncated = nullptr) const;

  // The same in steps, for a caller that batches texts of several requests (a server):
  //   PreparedText p = embed.prepare("a text", options);   // throws for this text only
  //   Matrix rows = embed.run({p, q, ...}, options);        // one forward pass, one row each
  PreparedText prepare(std::string_view text, const EmbedOptions& options = {}) const;
  // The same from token ids (without <s> </s>, which are added; the prompt's tokens go first).
  // Throws roberta::Error for an id outside the model's vocabulary:
  //   PreparedText p = embed.prepare_ids(std::vector<int32_t>{133, 812}, options);
  PreparedText prepare_ids(std::span<const int32_t> ids, const EmbedOptions& options = {}) const;
  Matrix run(std::span<const PreparedText> texts, const EmbedOptions& options = {}) const;
  // The steps after pooling, on one pooled vector: the folder's Dense modules, then L2
  // normalisation (options.normalize, else the folder's Normalize module).
  std::vector<float> after_pooling(std::vector<float> pooled, const EmbedOptions& options = {}) const;
  // Every token's last hidden state (TEI's /embed_all): one (tokens, hidden) matrix per text.
  std::vector<Matrix> run_tokens(std::span<const PreparedText> texts) const;

  // Floats per embedding: the last Dense module's output size, else the hidden size.
  size_t dimension() const;
  // The dimension with options.pooling (one mode instead of the folder's) taken into account.
  size_t dimension(const EmbedOptions& options) const;
  Pooling default_pooling() const { return config_.pooling; }
  bool default_normalize() const { return config_.normalize; }
  // Tokens per text (incl. <s> </s>) when EmbedOptions::max_length is 0: sentence-transformers'
  // max_seq_length, capped at the model's maximum.
  size_t max_seq_length() const;
  const SentenceTransformerConfig& config() const { return config_; }
  const Model& model() const { return model_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  // Tokens per text for these options (max_length, else max_seq_length()).
  size_t max_tokens(const EmbedOptions& options) const;

 private:
  std::string prompt_for(const EmbedOptions& options) const;
  // Cuts p.ids (with <s> </s>) to max_tokens(options) on the options' side, or throws.
  void fit_length(PreparedText& p, const EmbedOptions& options) const;

  Model model_;
  Tokenizer tokenizer_;
  SentenceTransformerConfig config_;
};

}  // namespace roberta
