// roberta tokenize: token ids, tokens and offsets as JSON lines.
#include <iostream>

#include "common.h"

namespace roberta::cli {
namespace {

json offsets_json(const std::vector<Offsets>& offsets) {
  json out = json::array();
  for (const auto& [s, e] : offsets) out.push_back({s, e});
  return out;
}

// The answer for each line of a chunk: an encoding, or the message of its error.
struct Answers {
  std::vector<Encoding> encodings;
  std::vector<std::optional<std::string>> errors;
  explicit Answers(size_t n) : encodings(n), errors(n) {}
};

// Encodes texts[i] into answers at where[i] with Tokenizer::encode_batch on `threads` threads. The
// batch stops at its first error; then every text is encoded alone, to answer the others and give
// each bad one its own message.
void encode_texts(const Tokenizer& tok, std::span<const std::string> texts, std::span<const size_t> where,
                  const EncodeOptions& options, unsigned threads, Answers& answers) {
  if (texts.empty()) return;
  try {
    std::vector<Encoding> batch = tok.encode_batch(texts, options, threads);
    for (size_t i = 0; i < texts.size(); ++i) answers.encodings[where[i]] = std::move(batch[i]);
    return;
  } catch (const Error&) {
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    try {
      answers.encodings[where[i]] = tok.encode(texts[i], options);
    } catch (const Error& e) {
      answers.errors[where[i]] = e.what();
    }
  }
}

}  // namespace

int run_tokenize(const Args& args) {
  const Tokenizer tok = Tokenizer::from_dir(model_dir(args));
  EncodeOptions options;
  options.add_special_tokens = !args.flag("no-special-tokens");
  if (auto n = args.integer("max-length", 1, 1'000'000'000)) options.max_length = static_cast<size_t>(*n);
  if (args.flag("replace-invalid-utf8")) options.invalid_utf8 = InvalidUtf8::kReplace;
  const std::string format = args.get("input-format").value_or("text");
  if (format != "text" && format != "jsonl") throw UsageError("--input-format must be text or jsonl");
  const bool byte_offsets = args.flag("byte-offsets");
  // --threads (applied by the dispatcher) is the engine's thread count; the tokenizer uses the same.
  const unsigned threads = num_threads();

  const std::optional<std::string> text = args.get("text");
  LineReader lines = text ? LineReader::from_texts({*text}) : LineReader::from_stdin();
  // Chunks of lines, so that encode_batch has work for every thread while memory stays bounded; a
  // person typing at a terminal gets each answer at once.
  const size_t chunk_lines = lines.interactive() ? 1 : 1024;
  std::vector<std::string> chunk, singles;
  std::vector<size_t> where;
  for (size_t first = 0; lines.next_chunk(chunk, chunk_lines); first += chunk.size()) {
    Answers answers(chunk.size());
    if (format == "jsonl") {
      // Strings are encoded in one batch; a pair [a, b] alone (encode_batch takes single texts).
      singles.clear(), where.clear();
      for (size_t i = 0; i < chunk.size(); ++i) {
        try {
          json input;
          try {
            input = json::parse(chunk[i]);
          } catch (const json::parse_error& err) {
            throw Error("invalid JSON at byte " + std::to_string(err.byte));
          }
          if (input.is_string()) {
            singles.push_back(input.get<std::string>());
            where.push_back(i);
          } else if (input.is_array() && input.size() == 2 && input[0].is_string() && input[1].is_string()) {
            answers.encodings[i] = tok.encode_pair(input[0].get<std::string>(), input[1].get<std::string>(), options);
          } else {
            throw Error("expected a JSON string or a pair [a, b] of strings");
          }
        } catch (const Error& e) {
          answers.errors[i] = e.what();
        }
      }
      encode_texts(tok, singles, where, options, threads, answers);
    } else {
      where.resize(chunk.size());
      for (size_t i = 0; i < chunk.size(); ++i) where[i] = i;
      encode_texts(tok, chunk, where, options, threads, answers);
    }
    std::string out;
    for (size_t i = 0; i < chunk.size(); ++i) {
      if (answers.errors[i]) {
        lines.report(first + i, *answers.errors[i]);
        out += json_error(*answers.errors[i]) + "\n";
        continue;
      }
      const Encoding& e = answers.encodings[i];
      json answer = {{"ids", e.ids}, {"tokens", e.tokens}, {"offsets", offsets_json(e.offsets)}};
      if (byte_offsets) answer["byte_offsets"] = offsets_json(e.byte_offsets);
      out += json_line(answer) + "\n";
    }
    std::cout << out << std::flush;
  }
  return lines.status();
}

}  // namespace roberta::cli
