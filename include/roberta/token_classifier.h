#pragma once
// Hugging Face's token-classification ("ner") pipeline on a RobertaForTokenClassification
// checkpoint. Load once, call from any thread.
//
//   roberta::TokenClassifier ner = roberta::TokenClassifier::load("models/roberta-ner");
//   roberta::TokenClassifyOptions o;
//   o.aggregation = roberta::Aggregation::kSimple;
//   for (const auto& e : ner("Angela Merkel visited New York", o))
//     std::cout << e.entity << " " << e.word << " " << e.start << "-" << e.end << "\n";
//   // PER "Angela Merkel" 0-13, LOC " New York" 22-30  (words keep their leading space, as HF)
//   const std::vector<std::string> words{"Angela", "Merkel", "visited", "New", "York"};
//   ner.classify_words(words, " ", o);  // transformers' is_split_into_words=True
//
// Long texts: without `stride` the text is cut at the model's length, as HF does. With a stride,
// the whole text is read in windows of max_length tokens (<s> and </s> included) that overlap by
// `stride` tokens (tokenizers' overflowing windows, as tokenizers 0.22 makes them); each window is
// classified and aggregated on its own, then HF's aggregate_overlapping_entities keeps, of entities
// that overlap (sorted by start), the longer one, or at equal length the higher score. Without an
// aggregation the entities are tokens: a token read by two windows is kept once, with the higher
// score, and its `index` counts in the window it was kept from (as HF, when no aggregation_strategy
// is given; transformers refuses a stride with an explicit "none", and so does the Python package).
//
// Steps for batching: prepare (windows), run (token logits of every window, packed), finish;
// run_batched does the three for many texts.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/config.h"
#include "roberta/error.h"
#include "roberta/model.h"
#include "roberta/tokenizer.h"

namespace roberta {

// HF's aggregation_strategy.
enum class Aggregation { kNone, kSimple, kFirst, kAverage, kMax };
Aggregation parse_aggregation(const std::string& name);  // "none", "simple", "first", "average", "max"

struct TokenClassifyOptions {
  Aggregation aggregation = Aggregation::kNone;
  std::vector<std::string> ignore_labels{"O"};  // entities (or groups) with these labels are dropped
  std::optional<size_t> stride{};  // read the whole text in windows that overlap by this many tokens
  size_t max_length = 0;         // tokens per window with <s> </s>; 0: the model's maximum
};

struct TokenEntity {
  // Without aggregation HF's "entity" (the token's label, e.g. "B-PER"); with one, "entity_group"
  // (the label without its B-/I- prefix, e.g. "PER").
  std::string entity{};
  float score = 0;
  // Without aggregation the token as the vocabulary spells it ("ĠMerkel"); with one, the tokens
  // decoded by the ByteLevel decoder (" Angela Merkel"). HF decodes the words of first/average/max
  // twice, which garbles non-ASCII words not preceded by a space ("café" -> "caf\uFFFD"): kept.
  std::string word{};
  int64_t start = 0, end = 0;  // code points of the text, as HF's offsets
  size_t byte_start = 0, byte_end = 0;
  int64_t index = -1;  // without aggregation: the token's position in its window (<s> is 0; HF's index)
};

class TokenClassifier {
 public:
  struct Prepared {
    std::string text{};
    std::vector<Encoding> windows{};  // each <s> ... </s>, offsets into `text`
    size_t tokens = 0;              // the text's tokens between <s> and </s>
    size_t cut_at = 0;              // without a stride: where the text was cut (0: it was not)
  };

  // Throws Error (kInvalidModel) without a token-classification head.
  TokenClassifier(Model model, Tokenizer tokenizer);
  // Without weights (prepare and finish only; run throws).
  TokenClassifier(Tokenizer tokenizer, ModelConfig config);
  static TokenClassifier load(const std::filesystem::path& dir, const LoadOptions& options = {});

  // The errors prepare throws for the options alone, whatever the text: a max_length that leaves
  // no room for a token, a stride too large for a window (prepare reports the latter only for a
  // text longer than a window, as HF does). Lets a front end check its options once.
  void check_options(const TokenClassifyOptions& options) const;
  // Errors (kInvalidInput): invalid UTF-8, a stride too large for the window.
  Prepared prepare(std::string_view text, const TokenClassifyOptions& options = {}) const;
  // transformers' is_split_into_words=True: `words` joined by `delimiter` are the text that
  // entities' start / end / word refer to (HF's `sentence`), but each word is tokenized on its own
  // (Tokenizer::encode_words: without add_prefix_space no word gets a leading space, as in
  // transformers 5; 4.x refused such tokenizers). Errors: invalid UTF-8 naming the word, as prepare.
  Prepared prepare_words(std::span<const std::string> words, std::string_view delimiter = " ",
                         const TokenClassifyOptions& options = {}) const;
  // Token logits of every window, packed in window order: (tokens of all windows, num_labels).
  Matrix run(const Prepared& prepared) const;
  std::vector<TokenEntity> finish(const Prepared& prepared, const Matrix& logits,
                                  const TokenClassifyOptions& options = {}) const;
  std::vector<TokenEntity> operator()(std::string_view text, const TokenClassifyOptions& options = {}) const;
  // Many texts at once: the windows of every text share forward passes; each text gets its
  // entities, or the Error its own prepare or finish threw, about_input(i) (the others still get
  // theirs).
  std::vector<Result<std::vector<TokenEntity>>> run_batched(std::span<const std::string> texts,
                                                            const TokenClassifyOptions& options = {}) const;
  std::vector<TokenEntity> classify_words(std::span<const std::string> words, std::string_view delimiter = " ",
                                          const TokenClassifyOptions& options = {}) const;

  const ModelConfig& config() const { return config_; }
  // Tokens per window when options.max_length is 0: the positions' limit, or the tokenizer's
  // model_max_length when smaller (where transformers truncates).
  size_t max_length() const;

 private:
  size_t window_length(const TokenClassifyOptions& options) const;  // tokens per window, specials included
  // The windows of `full` (the encoding of `text`), offsets as the tokenizer gave them.
  Prepared windows(std::string text, const Encoding& full, const TokenClassifyOptions& options) const;
  std::optional<Model> model_;
  Tokenizer tokenizer_;
  ModelConfig config_;
};

}  // namespace roberta
