#pragma once
// Hugging Face's text-classification pipeline (sentiment analysis and the like) on a
// RobertaForSequenceClassification checkpoint. Load once, call from any thread.
//
//   roberta::TextClassifier classify = roberta::TextClassifier::load("models/sst2");
//   auto best = classify({{"This movie was great!"}});           // [[{"POSITIVE", 0.998}]]
//   roberta::TextClassifyOptions all;
//   all.top_k = std::nullopt;                                    // every label, best first
//   auto scores = classify({{"A man plays.", "Someone makes music."}}, all);  // a text pair
//
// Many inputs, each with its own answer or error (a bad input does not fail the others):
//   for (const auto& r : classify.run_batched(inputs))
//     if (!r.ok()) std::cerr << r.error->what() << "\n";   // "input 2: the text has 600 tokens; ..."
// The three steps are public so that a server can batch several requests into one forward pass:
//   auto prepared = classify.prepare(inputs, options);   // tokenize and check
//   roberta::Matrix logits = classify.run(prepared);     // (inputs, num_labels)
//   auto results = classify.finish(prepared, logits, options);
// Several callers' inputs can share one forward pass: pack the ids of their encodings into one
// Batch, run it, and give each caller its rows (in packing order) to finish:
//   roberta::Batch batch;
//   for (const auto& e : a.encodings) batch.add_sequence(e.ids);   // a, b: two prepare() results
//   for (const auto& e : b.encodings) batch.add_sequence(e.ids);
//   roberta::Matrix rows = classify.run(batch);   // a's rows first, then b's
#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "roberta/config.h"
#include "roberta/error.h"
#include "roberta/model.h"
#include "roberta/tokenizer.h"

namespace roberta {

struct LabelScore {
  std::string label{};
  float score = 0;
};

// transformers' ClassificationFunction. kDefault: the rule of TextClassificationPipeline.postprocess:
// problem_type "regression" -> none; "multi_label_classification" or a single label -> sigmoid;
// otherwise softmax.
enum class ClassificationFunction { kDefault, kSoftmax, kSigmoid, kNone };
// "default", "softmax", "sigmoid", "none" (any case); Error (kInvalidInput) otherwise.
ClassificationFunction parse_classification_function(const std::string& name);

struct TextInput {
  std::string text{};
  std::optional<std::string> text_pair{};  // HF's {"text": ..., "text_pair": ...}
};

struct TextClassifyOptions {
  // As HF's top_k: 1 (the default) gives the best label only, k the k best, nullopt every label;
  // always sorted by score, best first (ties keep label order).
  std::optional<size_t> top_k = 1;
  ClassificationFunction function_to_apply = ClassificationFunction::kDefault;
  // transformers 4.x's deprecated return_all_scores=true: every label in label-id order, not
  // sorted (overrides top_k). transformers 5 removed the flag.
  bool return_all_scores = false;
  // As the tokenizer's truncation=True: cut over-long texts (longest_first) to the model's length.
  // false (HF's default): an over-long text is an error.
  bool truncation = false;
  // With truncation, the tokenizer's strategy (truncation="only_first" / "only_second") and its
  // max_length (0: the tokenizer's model_max_length, or the model's length when smaller).
  TruncationStrategy truncation_strategy = TruncationStrategy::kLongestFirst;
  size_t max_length = 0;
  // Which end truncation cuts: kRight keeps the start (HF's default), kLeft the end (the
  // tokenizer's truncation_side="left", TEI's "truncation_direction": "Left").
  Side truncation_side = Side::kRight;
};

class TextClassifier {
 public:
  struct Prepared {
    std::vector<Encoding> encodings{};  // one per input
  };

  // Throws Error (kInvalidModel) when the model has no sequence-classification head.
  TextClassifier(Model model, Tokenizer tokenizer);
  // Without weights: prepare and finish work (post-processing of logits computed elsewhere),
  // run throws. The config supplies the labels, problem_type and maximum length.
  TextClassifier(Tokenizer tokenizer, ModelConfig config);
  static TextClassifier load(const std::filesystem::path& dir, const LoadOptions& options = {});

  // One input. Errors (kInvalidInput): invalid UTF-8, too long without truncation.
  Prepared prepare(const TextInput& input, const TextClassifyOptions& options = {}) const;
  // Several inputs; an error is about_input(i) of the first bad one.
  Prepared prepare(std::span<const TextInput> inputs, const TextClassifyOptions& options = {}) const;
  Matrix run(const Prepared& prepared) const;
  // The run step on a Batch the caller packed from the encodings of any number of prepare calls:
  // the raw logits (sequences, num_labels), one row per sequence in batch order. The rows do not
  // depend on what else is in the batch.
  Matrix run(const Batch& batch) const;
  // `logits` has one row per input and num_labels columns.
  std::vector<std::vector<LabelScore>> finish(const Prepared& prepared, const Matrix& logits,
                                              const TextClassifyOptions& options = {}) const;
  std::vector<std::vector<LabelScore>> operator()(std::span<const TextInput> inputs,
                                                  const TextClassifyOptions& options = {}) const;
  std::vector<std::vector<LabelScore>> operator()(const std::vector<TextInput>& inputs,
                                                  const TextClassifyOptions& options = {}) const {
    return (*this)(std::span<const TextInput>(inputs), options);
  }
  // Each input's labels, or the Error its own prepare threw, about_input(i); the good inputs share
  // forward passes.
  std::vector<Result<std::vector<LabelScore>>> run_batched(std::span<const TextInput> inputs,
                                                           const TextClassifyOptions& options = {}) const;

  // kDefault resolved for this model's config.
  ClassificationFunction default_function() const;
  const ModelConfig& config() const { return config_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  std::optional<Model> model_;
  Tokenizer tokenizer_;
  ModelConfig config_;
};

}  // namespace roberta
