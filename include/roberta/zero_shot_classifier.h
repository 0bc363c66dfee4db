#pragma once
// Hugging Face's zero-shot-classification pipeline: an NLI model (RobertaForSequenceClassification
// with an "entailment" label, e.g. roberta-large-mnli) scores each candidate label as the hypothesis
// "This example is {label}." against the text. Load once, call from any thread.
//
//   roberta::ZeroShotClassifier zs = roberta::ZeroShotClassifier::load("models/roberta-large-mnli");
//   roberta::ZeroShotOptions o;
//   o.candidate_labels = {"urgent", "not urgent", "phone"};
//   roberta::ZeroShotResult r = zs("My phone broke, I need help now!", o);
//   // r.labels {"urgent", "phone", "not urgent"}, r.scores {0.63, 0.35, 0.02} (sum 1)
//   o.multi_label = true;   // each label on its own: softmax of [contradiction, entailment]
//
// Steps for batching across requests: prepare (one pair per sequence and label, in that order),
// run (logits, one row per pair), finish; run_batched does the three for many sequences.
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

struct ZeroShotOptions {
  std::vector<std::string> candidate_labels{};
  // Python str.format with the label as its one argument: "{}" or "{0}", "{{" and "}}" for braces.
  std::string hypothesis_template = "This example is {}.";
  // false: a softmax over the labels' entailment logits. true (and always with one label): each
  // label alone, the softmax of its [contradiction, entailment] logits.
  bool multi_label = false;
};

struct ZeroShotResult {
  std::string sequence{};
  std::vector<std::string> labels{};  // best first
  std::vector<float> scores{};
};

// HF's candidate_labels given as one string: split at commas, stripped, empty parts dropped.
std::vector<std::string> parse_candidate_labels(std::string_view comma_separated);

// The hypothesis for `label`, formatted as Python's template.format(label) does; Error
// (kInvalidInput) for a template with other fields or unbalanced braces.
std::string format_hypothesis(const std::string& hypothesis_template, const std::string& label);

class ZeroShotClassifier {
 public:
  struct Prepared {
    std::vector<std::string> sequences{};
    std::vector<std::string> labels{};
    std::vector<Encoding> pairs;  // (sequence, hypothesis) for each sequence, then each label
  };

  // Throws Error (kInvalidModel) when the model has no sequence-classification head or fewer than
  // 2 labels. Without a label starting with "entail" (any case) in label2id, the last label is
  // taken as entailment, as transformers does, and warning() says so.
  ZeroShotClassifier(Model model, Tokenizer tokenizer);
  // Without weights (prepare and finish only; run throws).
  ZeroShotClassifier(Tokenizer tokenizer, ModelConfig config);
  static ZeroShotClassifier load(const std::filesystem::path& dir, const LoadOptions& options = {});

  // The errors of the options alone (kInvalidInput): no label, a bad template, invalid UTF-8.
  void check_options(const ZeroShotOptions& options) const;
  // Each pair is truncated only_first to the model's length; when the hypothesis alone is too long
  // for that, HF tokenizes without truncation and the pair is then an error here.
  // Errors (kInvalidInput): the options', an empty sequence, invalid UTF-8.
  Prepared prepare(const std::string& sequence, const ZeroShotOptions& options) const;
  // Several sequences; an error of one is about_input(i) of the first bad one.
  Prepared prepare(std::span<const std::string> sequences, const ZeroShotOptions& options) const;
  Matrix run(const Prepared& prepared) const;  // (pairs, num_labels)
  std::vector<ZeroShotResult> finish(const Prepared& prepared, const Matrix& logits,
                                     const ZeroShotOptions& options) const;
  std::vector<ZeroShotResult> operator()(std::span<const std::string> sequences, const ZeroShotOptions& options) const;
  ZeroShotResult operator()(const std::string& sequence, const ZeroShotOptions& options) const;
  // Each sequence's result, or the Error its own prepare threw, about_input(i); the good sequences
  // share forward passes. The options' errors are the whole call's.
  std::vector<Result<ZeroShotResult>> run_batched(std::span<const std::string> sequences,
                                                  const ZeroShotOptions& options) const;

  // The logit columns HF uses: the first label2id entry starting with "entail" (HF walks label2id
  // in the file's order, we in sorted label order: they differ only for a model with two such
  // labels), and 0 (or the last column when entailment is 0) for contradiction.
  size_t entailment_id() const { return entailment_; }
  size_t contradiction_id() const { return contradiction_; }
  // Why the entailment column is a guess (no "entail" label), or "".
  const std::string& warning() const { return warning_; }
  const ModelConfig& config() const { return config_; }

 private:
  void init();
  std::optional<Model> model_;
  Tokenizer tokenizer_;
  ModelConfig config_;
  size_t entailment_ = 0, contradiction_ = 0;
  std::string warning_{};
};

}  // namespace roberta
