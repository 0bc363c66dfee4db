// roberta fill-mask: the likeliest tokens at each <mask> of a text.
#include <iomanip>
#include <iostream>
#include <sstream>

#include "common.h"

namespace roberta::cli {
namespace {

std::string json_answer(const std::vector<std::vector<FillMaskCandidate>>& results) {
  json lists = json::array();
  for (const auto& list : results) {
    json items = json::array();
    for (const auto& c : list)
      items.push_back({{"score", c.score}, {"token", c.token}, {"token_str", c.token_str}, {"sequence", c.sequence}});
    lists.push_back(items);
  }
  return json_line(results.size() == 1 ? lists[0] : lists);  // one mask: a flat list, like HF
}

std::string text_answer(const std::string& text, const std::vector<std::vector<FillMaskCandidate>>& results) {
  std::ostringstream out;
  out << text << "\n";
  for (size_t m = 0; m < results.size(); ++m) {
    if (results.size() > 1) out << "  mask " << m + 1 << ":\n";
    for (const auto& c : results[m])
      out << "  " << std::fixed << std::setprecision(4) << c.score << "  " << std::left << std::setw(16)
          << json_line(c.token_str) << std::right << " " << c.sequence << "\n";
  }
  return out.str();
}

}  // namespace

int run_fill_mask(const Args& args) {
  const FillMask fill = FillMask::load(model_dir(args), load_options(args, "auto"));
  FillMaskOptions options;
  if (auto k = args.integer("top-k", 1, 1'000'000)) options.top_k = static_cast<size_t>(*k);
  if (auto t = args.get("targets")) {
    std::stringstream ss(*t);
    for (std::string w; std::getline(ss, w, ',');)
      if (!w.empty()) options.targets.push_back(w);
    if (options.targets.empty()) throw UsageError("--targets needs at least one word");
    std::vector<std::string> notes;
    fill.target_ids(options.targets, &notes);
    for (const auto& n : notes) std::cerr << "warning: " << n << "\n";
  }
  const bool as_json = args.flag("json");
  LineReader lines = input_lines(args);
  return answer_lines(lines, as_json, kChunkInputs, [&](const std::vector<std::string>& chunk) {
    std::vector<Answer> answers(chunk.size());
    const auto results = fill.run_batched(chunk, options);  // the texts share forward passes
    for (size_t i = 0; i < chunk.size(); ++i) {
      if (!results[i].ok())
        answers[i].error = results[i].error->detail();
      else
        answers[i].out = as_json ? json_answer(*results[i].value) + "\n" : text_answer(chunk[i], *results[i].value);
    }
    return answers;
  });
}

}  // namespace roberta::cli
