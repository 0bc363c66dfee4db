// roberta ner: Hugging Face's token-classification pipeline, one JSON list of entities per text.
#include <iomanip>
#include <iostream>
#include <sstream>

#include "common.h"

namespace roberta::cli {

int run_ner(const Args& args) {
  TokenClassifyOptions options;
  if (auto a = args.get("aggregation")) {
    try {
      options.aggregation = parse_aggregation(*a);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }
  if (auto labels = args.get("ignore-labels")) {
    options.ignore_labels.clear();
    std::stringstream ss(*labels);
    for (std::string l; std::getline(ss, l, ',');)
      if (!l.empty()) options.ignore_labels.push_back(l);
  }
  if (auto n = args.integer("max-length", 3, 1'000'000)) options.max_length = static_cast<size_t>(*n);
  if (auto n = args.integer("stride", 0, 1'000'000)) options.stride = static_cast<size_t>(*n);
  const bool aggregated = options.aggregation != Aggregation::kNone;
  const bool as_json = args.flag("json");

  const TokenClassifier classifier = TokenClassifier::load(model_dir(args), load_options(args, "auto"));
  const auto positions = static_cast<size_t>(classifier.config().max_sequence_length());
  const size_t window = options.max_length ? std::min(options.max_length, positions) : classifier.max_length();
  if (!options.stride && window >= 3) {
    // Long texts are read whole, in windows that overlap by a quarter of the window (Hugging
    // Face's pipeline would cut them at the model's length unless given a stride).
    options.stride = std::min(window / 4, window - 3);  // (less than the window's tokens)
  }
  try {  // the options' errors are usage errors, not errors of every line
    classifier.check_options(options);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  LineReader lines = input_lines(args);
  return answer_lines(lines, as_json, kChunkInputs, [&](const std::vector<std::string>& chunk) {
    std::vector<Answer> answers(chunk.size());
    // The windows of every good text share forward passes; a bad text's error is its line's.
    const auto results = classifier.run_batched(chunk, options);
    for (size_t k = 0; k < chunk.size(); ++k) {
      if (!results[k].ok()) {
        answers[k].error = results[k].error->detail();
        continue;
      }
      const std::vector<TokenEntity>& entities = *results[k].value;
      if (as_json) {
        json list = json::array();
        for (const TokenEntity& e : entities) {
          if (aggregated)
            list.push_back({{"entity_group", e.entity}, {"score", e.score}, {"word", e.word}, {"start", e.start}, {"end", e.end}});
          else
            list.push_back({{"entity", e.entity}, {"score", e.score}, {"index", e.index}, {"word", e.word},
                            {"start", e.start}, {"end", e.end}});
        }
        answers[k].out = json_line(list) + "\n";
      } else {
        size_t width = 0;
        for (const TokenEntity& e : entities) width = std::max(width, e.entity.size());
        std::ostringstream out;
        out << chunk[k] << "\n";
        for (const TokenEntity& e : entities) {
          const std::string span = std::to_string(e.start) + "-" + std::to_string(e.end);
          out << "  " << std::left << std::setw(static_cast<int>(width)) << e.entity << "  " << score_text(e.score)
              << "  " << std::setw(9) << span << std::right;
          if (!aggregated) out << " token " << std::setw(3) << e.index;
          out << "  " << json_line(e.word) << "\n";
        }
        answers[k].out = out.str();
      }
    }
    return answers;
  });
}

}  // namespace roberta::cli
