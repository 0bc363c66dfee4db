#pragma once
// Hugging Face's fill-mask pipeline. Load once, call from any thread.
//
//   roberta::FillMask fill = roberta::FillMask::load("models/demo");
//   const auto predictions = fill("She opened the <mask> and looked out into the garden.");  // a list per <mask>
//   for (const auto& c : predictions[0])  // (a loop over fill(...)[0] would outlive the result)
//     std::cout << c.token_str << " " << c.score << "\n";   // " door" 0.1758 ...
//
// The same in steps, so that a caller (a server) can run the texts of several requests in one
// forward pass:
//   roberta::FillMask::Prepared a = fill.prepare("A <mask> day."), b = fill.prepare("The <mask> sat.");
//   roberta::Matrix logits = fill.run(std::vector{a, b});   // (2, vocab): a's mask, then b's
//   roberta::Matrix a_rows(a.mask_positions.size(), logits.cols);
//   std::copy_n(logits.row(0), a_rows.data.size(), a_rows.data.begin());
//   auto candidates = fill.finish(a, a_rows);               // = fill("A <mask> day.")
// or, with the caller's own packing, fill.run(batch) on a Batch of a.encoding.ids, b.encoding.ids:
// the rows of every <mask> of the batch, in batch order.
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/error.h"
#include "roberta/model.h"
#include "roberta/tokenizer.h"

namespace roberta {

struct FillMaskCandidate {
  float score = 0;        // softmax probability over the whole vocabulary
  int32_t token = 0;      // token id
  std::string token_str{};  // the token as text, e.g. " Paris"
  std::string sequence{};   // the input with this token in place of the mask
};

struct FillMaskOptions {
  size_t top_k = 5;
  std::vector<std::string> targets;  // restrict candidates to these words (HF's `targets`)
  // As the tokenizer's truncation=True (transformers: tokenizer_kwargs={"truncation": True}): cut
  // an over-long text to the model's length (a <mask> cut away is then the no-<mask> error).
  // false: an over-long text is an error.
  bool truncation = false;
};

class FillMask {
 public:
  // Throws roberta::Error (kInvalidModel) when the model has no MLM head or the tokenizer no <mask>.
  FillMask(Model model, Tokenizer tokenizer);
  static FillMask load(const std::filesystem::path& dir, const LoadOptions& options = {});

  // One text tokenized, and where its masks are: the prepare step.
  struct Prepared {
    Encoding encoding{};
    std::vector<size_t> mask_positions{};  // token indices of its <mask> tokens, in text order
  };

  // One candidate list per <mask>, in text order, like Hugging Face's fill-mask pipeline.
  // Throws roberta::Error when the text has no <mask> or is longer than the model allows.
  std::vector<std::vector<FillMaskCandidate>> operator()(std::string_view text,
                                                         const FillMaskOptions& options = {}) const;

  // The prepare step; throws roberta::Error (kInvalidInput) as operator() does for this text.
  // (Of the options only `truncation` counts here.)
  Prepared prepare(std::string_view text, const FillMaskOptions& options = {}) const;
  // The run step: one forward pass over the texts; the MLM logits of every <mask>, (masks of all
  // texts, vocab), text after text.
  Matrix run(std::span<const Prepared> texts) const;
  // The run step on a Batch the caller packed (from the encodings of prepared texts): the logits
  // of every <mask> token of the batch, in batch order. A row does not depend on the rest of the
  // batch.
  Matrix run(const Batch& batch) const;
  // The finish step of one text: `logits` holds its rows (mask_positions.size(), vocab); the
  // softmax over the vocabulary, the top_k (or the targets), and the filled-in sequences.
  std::vector<std::vector<FillMaskCandidate>> finish(const Prepared& text, const Matrix& logits,
                                                     const FillMaskOptions& options = {}) const;
  // Many texts at once: each text's candidate lists, or the Error its own prepare or finish threw,
  // about_input(i) (the others still get theirs). The good texts share forward passes.
  std::vector<Result<std::vector<std::vector<FillMaskCandidate>>>> run_batched(std::span<const std::string> texts,
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
