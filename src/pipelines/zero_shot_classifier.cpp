#include "roberta/zero_shot_classifier.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>

#include "pipelines/pipeline_util.h"
#include "roberta/error.h"

namespace roberta {

std::vector<std::string> parse_candidate_labels(std::string_view comma_separated) {
  std::vector<std::string> labels;
  size_t start = 0;
  while (true) {
    const size_t comma = comma_separated.find(',', start);
    const std::string part =
        pipeline::python_strip(comma_separated.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (!part.empty()) labels.push_back(part);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return labels;
}

std::string format_hypothesis(const std::string& t, const std::string& label) {
  // Python's str.format with one argument: {} numbers fields automatically (a second {} asks for
  // argument 1, which is not there), {0} names the label, and the two do not mix.
  std::string out;
  bool automatic = false, manual = false;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '{') {
      if (i + 1 < t.size() && t[i + 1] == '{') {
        out += '{';
        ++i;
        continue;
      }
      const size_t close = t.find('}', i);
      if (close == std::string::npos)
        throw Error("hypothesis_template \"" + t + "\": single '{' encountered");
      const std::string field = t.substr(i + 1, close - i - 1);
      if (field != "" && field != "0")
        throw Error("hypothesis_template \"" + t + "\": the field {" + field +
                    "} is not supported (use {} for the label)");
      if ((field.empty() && manual) || (!field.empty() && automatic))
        throw Error("hypothesis_template \"" + t + "\": cannot switch between {} and {0} (as Python's str.format)");
      if (field.empty() && automatic)
        throw Error("hypothesis_template \"" + t + "\": a second {} asks for a second value (as Python's "
                    "str.format: replacement index 1 out of range); use {0} to repeat the label");
      (field.empty() ? automatic : manual) = true;
      out += label;
      i = close;
    } else if (c == '}') {
      if (i + 1 < t.size() && t[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw Error("hypothesis_template \"" + t + "\": single '}' encountered");
    } else {
      out += c;
    }
  }
  return out;
}

ZeroShotClassifier::ZeroShotClassifier(Model model, Tokenizer tokenizer)
    : tokenizer_(std::move(tokenizer)), config_(model.config()) {
  model.require_head(Head::kSequenceClassification, "so it cannot score NLI pairs");
  model_.emplace(std::move(model));
  init();
}

ZeroShotClassifier::ZeroShotClassifier(Tokenizer tokenizer, ModelConfig config)
    : tokenizer_(std::move(tokenizer)), config_(std::move(config)) {
  init();
}

void ZeroShotClassifier::init() {
  std::optional<int64_t> entail;
  for (const auto& [label, id] : config_.label2id) {
    std::string lower = label;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower.rfind("entail", 0) == 0) {
      entail = id;
      break;
    }
  }
  const int64_t n = config_.num_labels();
  if (n < 2) throw Error("an NLI model needs at least 2 labels", ErrorKind::kInvalidModel);
  if (entail && (*entail < 0 || *entail >= n))
    throw Error("the model's label2id gives the entailment label id " + std::to_string(*entail) + ", not one of its " +
                    std::to_string(n) + " labels",
                ErrorKind::kInvalidModel);
  if (!entail) {
    // transformers warns and takes entailment_id -1: the last column (and contradiction 0).
    std::string found;
    for (const auto& [label, id] : config_.label2id) found += (found.empty() ? "" : ", ") + label;
    warning_ = "the model's label2id has no label starting with \"entail\" (found: " + found +
               "): as transformers does, the last label is taken as entailment and the first as contradiction; " +
               "give config.json a descriptive label2id for correct outputs";
    entail = n - 1;
  }
  entailment_ = static_cast<size_t>(*entail);
  contradiction_ = entailment_ == 0 ? static_cast<size_t>(n - 1) : 0;  // HF: -1 if entailment is 0, else 0
}

ZeroShotClassifier ZeroShotClassifier::load(const std::filesystem::path& dir, const LoadOptions& options) {
  auto [model, tokenizer] = pipeline::load_model_and_tokenizer(dir, options);
  return ZeroShotClassifier(std::move(model), std::move(tokenizer));
}

void ZeroShotClassifier::check_options(const ZeroShotOptions& options) const {
  if (options.candidate_labels.empty()) throw Error("zero-shot classification needs at least one candidate label");
  for (size_t i = 0; i < options.candidate_labels.size(); ++i)
    pipeline::require_utf8(options.candidate_labels[i], "candidate label " + std::to_string(i + 1));
  pipeline::require_utf8(options.hypothesis_template, "hypothesis_template");
  const std::string first = format_hypothesis(options.hypothesis_template, options.candidate_labels[0]);
  if (first == options.hypothesis_template)
    throw Error("the hypothesis_template \"" + options.hypothesis_template +
                "\" has no {} where the label should go");
}

ZeroShotClassifier::Prepared ZeroShotClassifier::prepare(const std::string& sequence,
                                                         const ZeroShotOptions& options) const {
  check_options(options);
  if (sequence.empty()) throw Error("the text is empty");
  pipeline::require_utf8(sequence, "");
  const size_t max_len = pipeline::model_max_length(config_);
  Prepared p;
  p.labels = options.candidate_labels;
  p.sequences.push_back(sequence);
  for (const std::string& label : options.candidate_labels) {
    const std::string hypothesis = format_hypothesis(options.hypothesis_template, label);
    EncodeOptions eo;
    eo.max_length = pipeline::truncation_length(config_, tokenizer_);
    eo.truncation = TruncationStrategy::kOnlyFirst;
    Encoding e;
    try {
      e = tokenizer_.encode_pair(sequence, hypothesis, eo);
    } catch (const Error&) {  // HF: "too short" -> tokenized again without truncation
      e = tokenizer_.encode_pair(sequence, hypothesis);
    }
    if (e.size() > max_len)
      throw Error("the text with the hypothesis \"" + hypothesis + "\" has " + std::to_string(e.size()) +
                  " tokens and the hypothesis alone leaves no room: the model allows at most " +
                  std::to_string(max_len));
    p.pairs.push_back(std::move(e));
  }
  return p;
}

ZeroShotClassifier::Prepared ZeroShotClassifier::prepare(std::span<const std::string> sequences,
                                                         const ZeroShotOptions& options) const {
  check_options(options);
  Prepared p;
  p.labels = options.candidate_labels;
  for (size_t s = 0; s < sequences.size(); ++s) {
    try {
      Prepared one = prepare(sequences[s], options);
      p.sequences.push_back(std::move(one.sequences.front()));
      for (Encoding& e : one.pairs) p.pairs.push_back(std::move(e));
    } catch (const Error& e) {
      throw e.about_input(s);
    }
  }
  return p;
}

std::vector<Result<ZeroShotResult>> ZeroShotClassifier::run_batched(std::span<const std::string> sequences,
                                                                    const ZeroShotOptions& options) const {
  check_options(options);
  return pipeline::run_batched<ZeroShotResult, Prepared>(
      sequences.size(), [&](size_t i) { return prepare(sequences[i], options); },
      [&](std::span<const Prepared> prepared) {
        Prepared all;
        all.pairs = pipeline::all_encodings(prepared, &Prepared::pairs);
        return run(all);
      },
      [](const Prepared& p) { return p.pairs.size(); },
      [&](const Prepared& p, const Matrix& rows) { return std::move(finish(p, rows, options).front()); });
}

Matrix ZeroShotClassifier::run(const Prepared& prepared) const {
  return pipeline::sequence_logits(pipeline::require_model(model_, "ZeroShotClassifier"), prepared.pairs);
}

std::vector<ZeroShotResult> ZeroShotClassifier::finish(const Prepared& prepared, const Matrix& logits,
                                                       const ZeroShotOptions& options) const {
  const size_t n = prepared.labels.size(), L = static_cast<size_t>(config_.num_labels());
  if (logits.rows != prepared.pairs.size() || logits.cols != L)
    throw Error("ZeroShotClassifier::finish: logits are " + std::to_string(logits.rows) + "x" +
                std::to_string(logits.cols) + ", expected " + std::to_string(prepared.pairs.size()) + "x" +
                std::to_string(L));
  std::vector<ZeroShotResult> results;
  for (size_t s = 0; s < prepared.sequences.size(); ++s) {
    std::vector<float> scores(n);
    if (options.multi_label || n == 1) {
      for (size_t i = 0; i < n; ++i) {
        const float* row = logits.row(s * n + i);
        const float two[2] = {row[contradiction_], row[entailment_]};
        float p[2];
        pipeline::softmax(two, 2, p);
        scores[i] = p[1];
      }
    } else {
      std::vector<float> entail(n);
      for (size_t i = 0; i < n; ++i) entail[i] = logits.row(s * n + i)[entailment_];
      pipeline::softmax(entail.data(), n, scores.data());
    }
    // HF: reversed(scores.argsort()). numpy's sort is stable for these small arrays, so equal
    // scores come out in reverse label order.
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return pipeline::higher_score(scores[b], scores[a]); });
    std::reverse(order.begin(), order.end());
    ZeroShotResult r;
    r.sequence = prepared.sequences[s];
    for (size_t i : order) {
      r.labels.push_back(prepared.labels[i]);
      r.scores.push_back(scores[i]);
    }
    results.push_back(std::move(r));
  }
  return results;
}

std::vector<ZeroShotResult> ZeroShotClassifier::operator()(std::span<const std::string> sequences,
                                                           const ZeroShotOptions& options) const {
  const Prepared p = prepare(sequences, options);
  return finish(p, run(p), options);
}

ZeroShotResult ZeroShotClassifier::operator()(const std::string& sequence, const ZeroShotOptions& options) const {
  return (*this)(std::span<const std::string>(&sequence, 1), options).front();
}

}  // namespace roberta
