// roberta qa: Hugging Face's question-answering pipeline (extractive answers from a context).
#include <iostream>
#include <sstream>

#include "common.h"

namespace roberta::cli {
namespace {

std::pair<std::string, std::string> parse_question(const std::string& line) {
  const json j = parse_json_input(line);
  if (!j.is_object()) throw Error("expected a JSON object {\"question\": ..., \"context\": ...}");
  for (const auto& [key, value] : j.items()) {
    if (key != "question" && key != "context")
      throw Error("unexpected key \"" + key + "\" (expected \"question\" and \"context\")");
    if (!value.is_string()) throw Error("\"" + key + "\" must be a string");
  }
  for (const char* key : {"question", "context"})
    if (!j.contains(key)) throw Error(std::string("no \"") + key + "\"");
  return {j["question"].get<std::string>(), j["context"].get<std::string>()};
}

json answer_json(const QuestionAnswer& a) {
  return {{"score", a.score}, {"start", a.start}, {"end", a.end}, {"answer", a.answer}};
}

}  // namespace

int run_qa(const Args& args) {
  QuestionAnswerOptions options;
  if (auto k = args.integer("top-k", 1, 1'000'000)) options.top_k = static_cast<size_t>(*k);
  if (auto n = args.integer("doc-stride", 0, 1'000'000)) options.doc_stride = static_cast<size_t>(*n);
  if (auto n = args.integer("max-answer-len", 1, 1'000'000)) options.max_answer_len = static_cast<size_t>(*n);
  if (auto n = args.integer("max-seq-len", 1, 1'000'000)) options.max_seq_len = static_cast<size_t>(*n);
  if (auto n = args.integer("max-question-len", 1, 1'000'000)) options.max_question_len = static_cast<size_t>(*n);
  options.handle_impossible_answer = args.flag("handle-impossible-answer");
  const std::optional<std::string> question = args.get("question"), context = args.get("context");
  if (question.has_value() != context.has_value()) throw UsageError("--question and --context go together");
  const bool as_json = args.flag("json");

  const QuestionAnswerer qa = QuestionAnswerer::load(model_dir(args), load_options(args, "auto"));
  try {  // the options' errors are usage errors, not errors of every line
    qa.check_options(options);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  // --question and --context: one input (its line is not read); else JSON lines from stdin.
  LineReader lines = question ? LineReader::from_texts({""}) : LineReader::from_stdin();
  return answer_lines(lines, as_json, kChunkInputs, [&](const std::vector<std::string>& chunk) {
    std::vector<Answer> answers(chunk.size());
    // The windows of every good input share forward passes; a bad input's error is its line's.
    std::vector<QuestionAnswerer::Input> inputs(chunk.size());
    std::vector<std::optional<Error>> parse_errors(chunk.size());
    for (size_t i = 0; i < chunk.size(); ++i) {
      try {
        const auto [q, c] = question ? std::make_pair(*question, *context) : parse_question(chunk[i]);
        inputs[i] = {q, c};
      } catch (const Error& e) {
        parse_errors[i] = e;
      }
    }
    const auto results = qa.run_batched(inputs, options);
    for (size_t k = 0; k < chunk.size(); ++k) {
      if (parse_errors[k] || !results[k].ok()) {
        answers[k].error = (parse_errors[k] ? *parse_errors[k] : *results[k].error).detail();
        continue;
      }
      const std::vector<QuestionAnswer>& found = *results[k].value;
      if (as_json) {
        // As HF: one answer is an object, several a list.
        json out = json::array();
        for (const QuestionAnswer& a : found) out.push_back(answer_json(a));
        answers[k].out = json_line(out.size() == 1 ? out[0] : out) + "\n";
      } else {
        std::ostringstream out;
        out << inputs[k].question << "\n";
        for (const QuestionAnswer& a : found)
          out << "  " << score_text(a.score) << "  " << a.start << "-" << a.end << "  " << json_line(a.answer) << "\n";
        answers[k].out = out.str();
      }
    }
    return answers;
  });
}

}  // namespace roberta::cli
