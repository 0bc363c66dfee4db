#pragma once
// Hugging Face's fill-mask pipeline. Load once, call from any thread.
//
//   roberta::FillMask fill = roberta::FillMask::load("models/demo");
//   for (const auto& c : fill("She opened the <mask> and looked out.")[0])
//     std::cout << c.token_str << " " << c.score << "\n";   // " door" 0.1758 ...
#include <filesystem>
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
  // Throws roberta::Error (kInvalidModel) when the model has no MLM head or the tokenizer no <mask>.
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

// transformers' clean_up_tokenization_spaces: " ." -> ".", " n't" -> "n't", ...
std::string clean_up_tokenization_spaces(std::string text);

}  // namespace roberta
