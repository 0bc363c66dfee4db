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
  try {  // the options on a text of more than a window first: their error is a usage error, not one of every line
    std::string probe = "a";
    for (size_t i = 0; i < window; ++i) probe += " a";
    classifier.prepare(probe, options);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  LineReader lines = input_lines(args);
  return answer_lines(lines, as_json, kChunkInputs, [&](const std::vector<std::string>& chunk) {
    std::vector<Answer> answers(chunk.size());
    // The windows of every good text in one forward pass; each text's rows go to its finish.
    std::vector<TokenClassifier::Prepared> prepared;
    std::vector<size_t> where;
    TokenClassifier::Prepared batch;
    for (size_t i = 0; i < chunk.size(); ++i) {
      try {
        prepared.push_back(classifier.prepare(chunk[i], options));
        for (const Encoding& w : prepared.back().windows) batch.windows.push_back(w);
        where.push_back(i);
      } catch (const Error& e) {
        answers[i].error = line_message(e.what(), "text", "the text");
      }
    }
    if (where.empty()) return answers;
    const Matrix logits = classifier.run(batch);
    size_t row = 0;
    for (size_t k = 0; k < where.size(); ++k) {
      size_t rows = 0;
      for (const Encoding& w : prepared[k].windows) rows += w.size();
      Matrix mine(rows, logits.cols);
      std::copy(logits.row(row), logits.row(row) + rows * logits.cols, mine.data.begin());
      row += rows;
      const std::vector<TokenEntity> entities = classifier.finish(prepared[k], mine, options);
      if (as_json) {
        json list = json::array();
        for (const TokenEntity& e : entities) {
          if (aggregated)
            list.push_back({{"entity_group", e.entity}, {"score", e.score}, {"word", e.word}, {"start", e.start}, {"end", e.end}});
          else
            list.push_back({{"entity", e.entity}, {"score", e.score}, {"index", e.index}, {"word", e.word},
                            {"start", e.start}, {"end", e.end}});
        }
        answers[where[k]].out = json_line(list) + "\n";
      } else {
        size_t width = 0;
        for (const TokenEntity& e : entities) width = std::max(width, e.entity.size());
        std::ostringstream out;
        out << chunk[where[k]] << "\n";
        for (const TokenEntity& e : entities) {
          const std::string span = std::to_string(e.start) + "-" + std::to_string(e.end);
          out << "  " << std::left << std::setw(static_cast<int>(width)) << e.entity << "  " << score_text(e.score)
              << "  " << std::setw(9) << span << std::right;
          if (!aggregated) out << " token " << std::setw(3) << e.index;
          out << "  " << json_line(e.word) << "\n";
        }
        answers[where[k]].out = out.str();
      }
    }
    return answers;
  });
}

}  // namespace roberta::cli
