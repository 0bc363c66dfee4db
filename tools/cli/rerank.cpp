// roberta rerank: sentence-transformers' CrossEncoder.rank (documents ranked for a query), or
// CrossEncoder.predict on [a, b] pairs with --pairs.
#include <iomanip>
#include <iostream>
#include <sstream>

#include "common.h"

namespace roberta::cli {
namespace {

TextPair parse_pair(const std::string& line) {
  const json j = parse_json_input(line);
  if (j.is_array() && j.size() == 2 && j[0].is_string() && j[1].is_string())
    return {j[0].get<std::string>(), j[1].get<std::string>()};
  throw Error("expected a pair [a, b] of two JSON strings");
}

// --pairs: one score (or list of label scores) per line, as CrossEncoder.predict.
int run_pairs(const Args& args, const CrossEncoder& encoder, const CrossEncoderOptions& options) {
  const bool as_json = args.flag("json");
  const size_t labels = static_cast<size_t>(encoder.model_config().num_labels());
  LineReader lines = input_lines(args);
  return answer_lines(lines, as_json, options.batch_size, [&](const std::vector<std::string>& chunk) {
    std::vector<Answer> answers(chunk.size());
    std::vector<TextPair> pairs;  // the lines that parse
    std::vector<size_t> where;
    for (size_t i = 0; i < chunk.size(); ++i) {
      try {
        pairs.push_back(parse_pair(chunk[i]));
        where.push_back(i);
      } catch (const Error& e) {
        answers[i].error = e.what();
      }
    }
    const auto results = encoder.run_batched(pairs, options);
    for (size_t k = 0; k < where.size(); ++k) {
      if (!results[k].ok()) {
        answers[where[k]].error = results[k].error->detail();
        continue;
      }
      const std::vector<float>& row = *results[k].value;
      answers[where[k]].out = json_line(labels == 1 ? json(row[0]) : json(row)) + "\n";
    }
    return answers;
  });
}

}  // namespace

int run_rerank(const Args& args) {
  CrossEncoderOptions scoring;
  if (auto n = args.integer("batch-size", 1, 1'000'000)) scoring.batch_size = static_cast<size_t>(*n);
  if (auto n = args.integer("max-length", 3, 1'000'000)) scoring.max_length = static_cast<size_t>(*n);
  const bool pairs = args.flag("pairs");
  RankOptions options;
  if (pairs) {
    for (const char* name : {"query", "top-k"})
      if (args.get(name)) throw UsageError(std::string("--pairs and --") + name + " conflict");
    if (args.flag("return-documents")) throw UsageError("--pairs and --return-documents conflict");
  } else {
    args.require("query");
    if (auto k = args.integer("top-k", 1, 1'000'000'000)) options.top_k = static_cast<size_t>(*k);
    options.return_documents = args.flag("return-documents");
    if (auto mode = args.get("long-documents")) {
      try {
        options.long_documents = parse_long_documents(*mode);
      } catch (const Error& e) {
        throw UsageError(std::string("--long-documents: ") + e.what());
      }
    }
    if (auto n = args.integer("stride", 0, 1'000'000)) options.stride = static_cast<size_t>(*n);
  }
  if (pairs && (args.get("long-documents") || args.get("stride")))
    throw UsageError("--long-documents and --stride go with --query (ranking), not --pairs");
  options.scoring = scoring;

  const CrossEncoder encoder = CrossEncoder::load(model_dir(args), load_options(args, "auto"));
  if (!encoder.config().note.empty()) std::cerr << "warning: " << encoder.config().note << "\n";
  if (pairs) return run_pairs(args, encoder, scoring);
  if (encoder.model_config().num_labels() != 1)
    throw Error(model_dir(args) + ": ranking needs a model with one label; this one has " +
                    std::to_string(encoder.model_config().num_labels()) + " (score pairs with --pairs)",
                ErrorKind::kInvalidModel);

  // Every document is read (ranking needs them all), scored in chunks of --batch-size pairs.
  const std::string query = *args.get("query");
  try {  // a bad query is a usage error, not an error of every line
    encoder.prepare(TextPair{query, "x"}, scoring);
  } catch (const Error& e) {
    const std::string m = e.what();
    throw UsageError((m.find("max_length") != std::string::npos ? "--max-length: " : "--query: ") + m);
  }
  LineReader lines = input_lines(args);
  std::vector<std::string> documents;  // the good ones
  std::vector<size_t> corpus_ids;      // their input positions (0-based, as sentence-transformers)
  std::vector<float> scores;
  std::vector<std::string> chunk;
  for (size_t first = 0; lines.next_chunk(chunk, scoring.batch_size); first += chunk.size()) {
    std::vector<TextPair> pairs;
    for (const std::string& document : chunk) pairs.emplace_back(query, document);
    const auto results = encoder.run_batched(pairs, scoring);  // (long documents: the UTF-8 check alone)
    std::vector<std::string> good;
    for (size_t i = 0; i < chunk.size(); ++i) {
      if (!results[i].ok()) {  // the query is good: the error is the document's, the pair's second text
        const std::string& m = results[i].error->detail();
        lines.report(first + i, m.starts_with("second text: ") ? m.substr(13) : m);
        continue;
      }
      corpus_ids.push_back(first + i);
      if (options.long_documents == LongDocuments::kTruncate) scores.push_back(results[i].value->front());
      good.push_back(std::move(chunk[i]));
    }
    if (options.long_documents != LongDocuments::kTruncate) {  // their windows' scores, joined
      RankOptions all = options;
      all.top_k.reset();
      std::vector<float> joined(good.size());
      for (const RankedDocument& d : encoder.rank(query, good, all)) joined[d.corpus_id] = d.score;
      scores.insert(scores.end(), joined.begin(), joined.end());
    }
    for (std::string& d : good) documents.push_back(std::move(d));
  }
  // rank_scores' corpus_id is the index among the good documents; the output's is the input position.
  const std::vector<RankedDocument> ranked = CrossEncoder::rank_scores(scores, documents, options);
  if (args.flag("json")) {
    json out = json::array();
    for (const RankedDocument& d : ranked) {
      json item = {{"corpus_id", corpus_ids[d.corpus_id]}, {"score", d.score}};
      if (d.text) item["text"] = *d.text;
      out.push_back(item);
    }
    std::cout << json_line(out) << "\n";
  } else {
    std::ostringstream out;
    out << "rank  score       id  document\n";
    for (size_t r = 0; r < ranked.size(); ++r) {
      const RankedDocument& d = ranked[r];
      out << std::setw(4) << r + 1 << "  " << std::left << std::setw(10) << score_text(d.score) << std::right
          << std::setw(4) << corpus_ids[d.corpus_id] << "  " << documents[d.corpus_id] << "\n";
    }
    std::cout << out.str();
  }
  std::cout << std::flush;
  return lines.status();
}

}  // namespace roberta::cli
