#pragma once
// The two everyday uses: fill-mask and sentence embeddings. Load once, call from any thread.
//
//   roberta::FillMask fill = roberta::FillMask::load("models/demo");
//   for (const auto& c : fill("She opened the <mask> and looked out.")[0])
//     std::cout << c.token_str << " " << c.score << "\n";
//
//   roberta::Embedder embed = roberta::Embedder::load("models/my-sentence-model");
//   roberta::Matrix e = embed({"first text", "second text"});   // (2, hidden), ready to compare
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/model.h"
#include "roberta/tokenizer.h"

namespace roberta {

struct FillMaskCandidate {
  float score = 0;        // softmax probability over the whole vocabulary
  int32_t token = 0;      // token id
  std::string token_str;  // the token as text, e.g. " Paris"
  std::string sequence;   // the input with this token in place of the mask
};

struct FillMaskOptions {
  size_t top_k = 5;
  std::vector<std::string> targets;  // restrict candidates to these words (HF's `targets`)
};

class FillMask {
 public:
  FillMask(Model model, Tokenizer tokenizer);
  static FillMask load(const std::filesystem::path& dir, const LoadOptions& options = {});

  // One candidate list per <mask>, in text order, like Hugging Face's fill-mask pipeline.
  // Throws roberta::Error when the text has no <mask> or is longer than the model allows.
  std::vector<std::vector<FillMaskCandidate>> operator()(std::string_view text,
                                                         const FillMaskOptions& options = {}) const;

  // Ids that `targets` resolve to, with a note for each word that was not one token.
  std::vector<int32_t> target_ids(const std::vector<std::string>& targets, std::vector<std::string>* notes) const;

  const Model& model() const { return model_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  Model model_;
  Tokenizer tokenizer_;
};

enum class Pooling { kMean, kCls, kMax, kPooler };
Pooling parse_pooling(const std::string& name);  // "mean", "cls", "max", "pooler"
const char* pooling_name(Pooling p);

struct EmbedOptions {
  std::optional<Pooling> pooling;    // default: the folder's sentence-transformers config, else mean
  std::optional<bool> normalize;     // L2-normalise; default as above, else false
  size_t batch_size = 32;
  size_t max_length = 0;             // tokens incl. <s> </s>; 0: the model's maximum
  bool truncate = true;              // false: an over-long text is an error
  std::string input_label = "input";  // errors say "<input_label> <first_index + i>: ..."
  size_t first_index = 1;
};

class Embedder {
 public:
  Embedder(Model model, Tokenizer tokenizer, Pooling default_pooling = Pooling::kMean, bool default_normalize = false);
  // Reads 1_Pooling/config.json and modules.json (sentence-transformers) for the defaults.
  static Embedder load(const std::filesystem::path& dir, const LoadOptions& options = {});

  // One row per text, in input order. Texts are sorted by length into batches internally.
  // `truncated`, when given, receives the indices of texts that were cut to max_length.
  Matrix operator()(std::span<const std::string> texts, const EmbedOptions& options = {},
                    std::vector<size_t>* truncated = nullptr) const;

  Pooling default_pooling() const { return pooling_; }
  bool default_normalize() const { return normalize_; }
  const Model& model() const { return model_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  Model model_;
  Tokenizer tokenizer_;
  Pooling pooling_;
  bool normalize_;
};

// transformers' clean_up_tokenization_spaces: " ." -> ".", " n't" -> "n't", ...
std::string clean_up_tokenization_spaces(std::string text);

}  // namespace roberta
