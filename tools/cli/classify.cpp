// roberta classify (text-classification) and roberta zero-shot (zero-shot-classification).
#include <iomanip>
#include <iostream>
#include <sstream>

#include "common.h"

namespace roberta::cli {
namespace {

std::string input_format(const Args& args) {
  const std::string format = args.get("input-format").value_or("text");
  if (format != "text" && format != "jsonl") throw UsageError("--input-format must be text or jsonl");
  return format;
}

// A classify input in JSON: "text", ["text", "text_pair"] or {"text": ..., "text_pair": ...}.
TextInput parse_text_input(const std::string& line) {
  const json j = parse_json_input(line);
  if (j.is_string()) return {j.get<std::string>(), std::nullopt};
  if (j.is_array() && j.size() == 2 && j[0].is_string() && j[1].is_string())
    return {j[0].get<std::string>(), j[1].get<std::string>()};
  if (j.is_object() && j.contains("text") && j["text"].is_string()) {
    TextInput in{j["text"].get<std::string>(), std::nullopt};
    for (const auto& [key, value] : j.items()) {
      if (key == "text") continue;
      if (key != "text_pair") throw Error("unexpected key \"" + key + "\" (expected \"text\" and \"text_pair\")");
      if (!value.is_string()) throw Error("\"text_pair\" must be a string");
      in.text_pair = value.get<std::string>();
    }
    return in;
  }
  throw Error("expected a JSON string, a pair [text, text_pair] of strings or {\"text\": ..., \"text_pair\": ...}");
}

// Readable rows "  LABEL  SCORE", the labels padded to one width.
std::string label_rows(const std::vector<std::string>& labels, const std::vector<float>& scores) {
  size_t width = 0;
  for (const auto& l : labels) width = std::max(width, l.size());
  std::ostringstream out;
  for (size_t i = 0; i < labels.size(); ++i)
    out << "  " << std::left << std::setw(static_cast<int>(width)) << labels[i] << "  " << score_text(scores[i]) << "\n";
  return out.str();
}

}  // namespace

int run_classify(const Args& args) {
  TextClassifyOptions options;
  if (auto k = args.integer("top-k", 1, 1'000'000)) options.top_k = static_cast<size_t>(*k);
  if (args.flag("all")) {
    if (args.get("top-k")) throw UsageError("--top-k and --all conflict");
    options.top_k = std::nullopt;
  }
  if (auto f = args.get("function")) {
    if (*f != "softmax" && *f != "sigmoid" && *f != "none")
      throw UsageError("--function must be softmax, sigmoid or none");
    options.function_to_apply = parse_classification_function(*f);
  }
  options.truncation = args.flag("truncate");
  const bool jsonl = input_format(args) == "jsonl";
  const bool as_json = args.flag("json");
  // transformers' TextClassificationPipeline.__call__ without top_k: a text's best label comes as
  // a list of one, a pair's ({"text", "text_pair"}) as the bare object.
  const bool legacy = !args.get("top-k") && !args.flag("all");

  const TextClassifier classifier = TextClassifier::load(model_dir(args), load_options(args, "auto"));
  LineReader lines = input_lines(args);
  return answer_lines(lines, as_json, kChunkInputs, [&](const std::vector<std::string>& chunk) {
    std::vector<Answer> answers(chunk.size());
    std::vector<TextInput> inputs;  // the lines that parse
    std::vector<size_t> where;
    for (size_t i = 0; i < chunk.size(); ++i) {
      try {
        inputs.push_back(jsonl ? parse_text_input(chunk[i]) : TextInput{chunk[i], std::nullopt});
        where.push_back(i);
      } catch (const Error& e) {
        answers[i].error = e.what();
      }
    }
    const auto results = classifier.run_batched(inputs, options);
    for (size_t k = 0; k < where.size(); ++k) {
      Answer& answer = answers[where[k]];
      if (!results[k].ok()) {  // the library's hint names its option; ours is --truncate
        std::string message = results[k].error->detail();
        if (const size_t hint = message.find("(set truncation to cut it)"); hint != std::string::npos)
          message.replace(hint, std::string::npos, "(--truncate cuts it)");
        answer.error = message;
        continue;
      }
      const auto& list = *results[k].value;
      const TextInput& in = inputs[k];
      if (as_json) {
        json items = json::array();
        for (const auto& s : list) items.push_back({{"label", s.label}, {"score", s.score}});
        answer.out = json_line(legacy && in.text_pair ? items.at(0) : items) + "\n";
      } else {
        std::vector<std::string> labels;
        std::vector<float> scores;
        for (const auto& s : list) labels.push_back(s.label), scores.push_back(s.score);
        answer.out = in.text + (in.text_pair ? " / " + *in.text_pair : "") + "\n" + label_rows(labels, scores);
      }
    }
    return answers;
  });
}

int run_zero_shot(const Args& args) {
  const bool jsonl = input_format(args) == "jsonl";
  ZeroShotOptions options;
  if (auto labels = args.get("labels")) {
    options.candidate_labels = parse_candidate_labels(*labels);
    if (options.candidate_labels.empty()) throw UsageError("--labels needs at least one label");
  } else if (!jsonl) {
    throw UsageError("missing required option --labels");
  }
  if (auto t = args.get("template")) {
    options.hypothesis_template = *t;
    try {
      if (format_hypothesis(*t, "label") == *t) throw UsageError("--template has no {} where the label should go");
    } catch (const Error& e) {
      throw UsageError(std::string("--template: ") + e.what());
    }
  }
  options.multi_label = args.flag("multi-label");
  const bool as_json = args.flag("json");

  const std::string dir = model_dir(args);
  const ZeroShotClassifier classifier = [&] {
    try {
      return ZeroShotClassifier::load(dir, load_options(args, "auto"));
    } catch (const Error& e) {  // the label-count check does not name the folder
      if (e.kind() == ErrorKind::kInvalidModel && (std::string_view(e.what()).starts_with("an NLI model") ||
                                                   std::string_view(e.what()).starts_with("the model's label2id")))
        throw Error(dir + ": " + e.what(), e.kind());
      throw;
    }
  }();
  if (!classifier.warning().empty()) std::cerr << "warning: " << dir << ": " << classifier.warning() << "\n";
  LineReader lines = input_lines(args);
  return answer_lines(lines, as_json, kChunkInputs, [&](const std::vector<std::string>& chunk) {
    std::vector<Answer> answers(chunk.size());
    // The lines that parse, grouped by their labels (a JSON line may bring its own): one run_batched
    // per group.
    std::map<std::vector<std::string>, std::pair<std::vector<std::string>, std::vector<size_t>>> groups;
    for (size_t i = 0; i < chunk.size(); ++i) {
      try {
        std::string sequence = chunk[i];
        ZeroShotOptions line_options = options;
        if (jsonl) {
          const json j = parse_json_input(chunk[i]);
          if (j.is_string()) {
            sequence = j.get<std::string>();
          } else if (j.is_object() && j.contains("sequence") && j["sequence"].is_string()) {
            sequence = j["sequence"].get<std::string>();
            for (const auto& [key, value] : j.items()) {
              if (key == "sequence") continue;
              if (key != "candidate_labels")
                throw Error("unexpected key \"" + key + "\" (expected \"sequence\" and \"candidate_labels\")");
              if (value.is_string()) {
                line_options.candidate_labels = parse_candidate_labels(value.get<std::string>());
              } else if (value.is_array() && std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_string(); })) {
                line_options.candidate_labels = value.get<std::vector<std::string>>();
              } else {
                throw Error("\"candidate_labels\" must be a string or a list of strings");
              }
              if (line_options.candidate_labels.empty()) throw Error("the candidate label list is empty");
            }
          } else {
            throw Error("expected a JSON string or {\"sequence\": ..., \"candidate_labels\": [...]}");
          }
          if (line_options.candidate_labels.empty())
            throw Error("no candidate labels (give --labels, or \"candidate_labels\" in the line)");
        }
        classifier.check_options(line_options);  // the line's labels
        auto& [sequences, where] = groups[line_options.candidate_labels];
        sequences.push_back(std::move(sequence));
        where.push_back(i);
      } catch (const Error& e) {
        answers[i].error = e.what();
      }
    }
    for (const auto& [labels, group] : groups) {
      const auto& [sequences, where] = group;
      ZeroShotOptions group_options = options;
      group_options.candidate_labels = labels;
      const auto results = classifier.run_batched(sequences, group_options);
      for (size_t k = 0; k < where.size(); ++k) {
        if (!results[k].ok()) {
          answers[where[k]].error = results[k].error->detail();
          continue;
        }
        const ZeroShotResult& r = *results[k].value;
        answers[where[k]].out = as_json ? json_line({{"sequence", r.sequence}, {"labels", r.labels}, {"scores", r.scores}}) + "\n"
                                        : r.sequence + "\n" + label_rows(r.labels, r.scores);
      }
    }
    return answers;
  });
}

}  // namespace roberta::cli
