#include "roberta/text_classifier.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "pipelines/pipeline_util.h"
#include "roberta/error.h"

namespace roberta {

ClassificationFunction parse_classification_function(const std::string& name) {
  std::string n = name;
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "default") return ClassificationFunction::kDefault;
  if (n == "softmax") return ClassificationFunction::kSoftmax;
  if (n == "sigmoid") return ClassificationFunction::kSigmoid;
  if (n == "none") return ClassificationFunction::kNone;
  throw Error("function_to_apply \"" + name + "\" is not one of default, softmax, sigmoid, none");
}

TextClassifier::TextClassifier(Model model, Tokenizer tokenizer)
    : tokenizer_(std::move(tokenizer)), config_(model.config()) {
  model.require_head(Head::kSequenceClassification, "so it cannot classify texts");
  model_.emplace(std::move(model));
}

TextClassifier::TextClassifier(Tokenizer tokenizer, ModelConfig config)
    : tokenizer_(std::move(tokenizer)), config_(std::move(config)) {}

TextClassifier TextClassifier::load(const std::filesystem::path& dir, const LoadOptions& options) {
  auto [model, tokenizer] = pipeline::load_model_and_tokenizer(dir, options);
  return TextClassifier(std::move(model), std::move(tokenizer));
}

ClassificationFunction TextClassifier::default_function() const {
  const std::string& p = config_.problem_type;
  if (p == "regression") return ClassificationFunction::kNone;
  if (p == "multi_label_classification" || config_.num_labels() == 1) return ClassificationFunction::kSigmoid;
  return ClassificationFunction::kSoftmax;  // single_label_classification or several labels
}

TextClassifier::Prepared TextClassifier::prepare(const TextInput& input, const TextClassifyOptions& options) const {
  const size_t max_len = pipeline::model_max_length(config_);
  pipeline::require_utf8(input.text, "");
  if (input.text_pair) pipeline::require_utf8(*input.text_pair, "text_pair");
  EncodeOptions eo;
  if (options.truncation) {
    eo.max_length =
        options.max_length ? std::min(options.max_length, max_len) : pipeline::truncation_length(config_, tokenizer_);
    eo.truncation = options.truncation_strategy;
    eo.truncation_side = options.truncation_side;
  }
  Encoding e = input.text_pair ? tokenizer_.encode_pair(input.text, *input.text_pair, eo) : tokenizer_.encode(input.text, eo);
  if (e.size() > max_len)
    throw Error("the text has " + std::to_string(e.size()) + " tokens; the model allows at most " +
                std::to_string(max_len) + " (set truncation to cut it)");
  Prepared p;
  p.encodings.push_back(std::move(e));
  return p;
}

TextClassifier::Prepared TextClassifier::prepare(std::span<const TextInput> inputs,
                                                 const TextClassifyOptions& options) const {
  Prepared p;
  p.encodings.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    try {
      p.encodings.push_back(std::move(prepare(inputs[i], options).encodings.front()));
    } catch (const Error& e) {
      throw e.about_input(i);
    }
  }
  return p;
}

Matrix TextClassifier::run(const Prepared& prepared) const {
  return pipeline::sequence_logits(pipeline::require_model(model_, "TextClassifier"), prepared.encodings);
}

Matrix TextClassifier::run(const Batch& batch) const {
  return pipeline::batch_sequence_logits(pipeline::require_model(model_, "TextClassifier"), batch);
}

std::vector<std::vector<LabelScore>> TextClassifier::finish(const Prepared& prepared, const Matrix& logits,
                                                            const TextClassifyOptions& options) const {
  const size_t L = static_cast<size_t>(config_.num_labels());
  if (logits.rows != prepared.encodings.size() || logits.cols != L)
    throw Error("TextClassifier::finish: logits are " + std::to_string(logits.rows) + "x" +
                std::to_string(logits.cols) + ", expected " + std::to_string(prepared.encodings.size()) + "x" +
                std::to_string(L));
  ClassificationFunction fn = options.function_to_apply;
  if (fn == ClassificationFunction::kDefault) fn = default_function();
  std::vector<std::vector<LabelScore>> results;
  std::vector<float> scores(L);
  for (size_t r = 0; r < logits.rows; ++r) {
    const float* x = logits.row(r);
    if (fn == ClassificationFunction::kSoftmax)
      pipeline::softmax(x, L, scores.data());
    else if (fn == ClassificationFunction::kSigmoid)
      for (size_t j = 0; j < L; ++j) scores[j] = static_cast<float>(pipeline::sigmoid(x[j]));
    else
      std::copy(x, x + L, scores.begin());
    std::vector<LabelScore> list;
    for (size_t j = 0; j < L; ++j) list.push_back({config_.id2label[j], scores[j]});
    if (!options.return_all_scores) {
      // Python's sort(reverse=True) is stable: equal scores keep label order.
      std::stable_sort(list.begin(), list.end(), [](const LabelScore& a, const LabelScore& b) {
        return pipeline::higher_score(a.score, b.score);
      });
      if (options.top_k && *options.top_k < list.size()) list.resize(*options.top_k);
    }
    results.push_back(std::move(list));
  }
  return results;
}

std::vector<Result<std::vector<LabelScore>>> TextClassifier::run_batched(std::span<const TextInput> inputs,
                                                                       const TextClassifyOptions& options) const {
  return pipeline::run_batched_sequences<std::vector<LabelScore>>(
      *this, inputs, options,
      [&](const Prepared& p, const Matrix& rows) { return std::move(finish(p, rows, options).front()); });
}

std::vector<std::vector<LabelScore>> TextClassifier::operator()(std::span<const TextInput> inputs,
                                                                const TextClassifyOptions& options) const {
  const Prepared p = prepare(inputs, options);
  return finish(p, run(p), options);
}

}  // namespace roberta
