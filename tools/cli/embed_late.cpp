// roberta embed --late-chunking: each input line a document (a JSON string, or {"text", "spans"}),
// each output line its chunks' spans and vectors (roberta/late_chunking.h).
#include <nlohmann/json.hpp>

#include "embed.h"
#include "roberta/late_chunking.h"

namespace roberta::cli {
namespace {

// A JSON line: "text", or {"text": "...", "spans": [[start, end], ...]}.
std::pair<std::string, std::optional<std::vector<TextSpan>>> parse_document(const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded()) throw Error("not JSON: expected a JSON string or {\"text\": ..., \"spans\": [[start, end], ...]}");
  if (j.is_string()) return {j.get<std::string>(), std::nullopt};
  if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
    throw Error("expected a JSON string or an object with a string \"text\"");
  for (const auto& [key, value] : j.items())
    if (key != "text" && key != "spans") throw Error("unknown field \"" + key + "\" (text, spans)");
  if (!j.contains("spans")) return {j["text"].get<std::string>(), std::nullopt};
  const auto& s = j["spans"];
  if (!s.is_array()) throw Error("\"spans\" must be a list of [start, end] pairs");
  std::vector<TextSpan> spans;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto& p = s[i];
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_unsigned() || !p[1].is_number_unsigned())
      throw Error("spans[" + std::to_string(i) + "] must be [start, end], two non-negative integers");
    spans.push_back({p[0].get<size_t>(), p[1].get<size_t>()});
  }
  return {j["text"].get<std::string>(), std::move(spans)};
}

void write_chunked(std::ostream& os, std::span<const ChunkedText> docs) {
  std::string text;
  char buf[32];
  for (const ChunkedText& d : docs) {
    text += "{\"spans\":[";
    for (size_t c = 0; c < d.spans.size(); ++c)
      text += (c ? ",[" : "[") + std::to_string(d.spans[c].start) + "," + std::to_string(d.spans[c].end) + "]";
    text += "],\"embeddings\":[";
    for (size_t r = 0; r < d.embeddings.rows; ++r) {
      text += r ? ",[" : "[";
      for (size_t c = 0; c < d.embeddings.cols; ++c)
        text.append(buf, static_cast<size_t>(std::snprintf(buf, sizeof buf, "%s%.9g", c ? "," : "",
                                                           static_cast<double>(d.embeddings.row(r)[c]))));
      text += ']';
    }
    text += "],\"tokens\":" + std::to_string(d.tokens) + ",\"windows\":" + std::to_string(d.windows) + "}\n";
  }
  os << text;
}

}  // namespace

int embed_late_chunking(EmbedRun& run) {
  const Args& args = run.args;
  if (run.format != "jsonl") throw UsageError("--late-chunking writes JSON lines: --format npy does not apply");
  for (const char* other : {"precision", "calibration-embeddings"})
    if (args.get(other)) throw UsageError(std::string("--") + other + " does not apply to --late-chunking");
  if (args.flag("no-truncate")) throw UsageError("--no-truncate does not apply to --late-chunking (nothing is cut)");
  if (run.options.pooling && *run.options.pooling != Pooling::kMean)
    throw UsageError("--late-chunking pools each chunk by mean: --pooling " +
                     std::string(pooling_name(*run.options.pooling)) + " does not apply");
  LateChunkingOptions options{.text = run.options};
  try {
    if (auto by = args.get("chunk-by")) options.chunk_by = parse_chunk_by(*by);
  } catch (const Error& e) {
    throw UsageError(std::string("--chunk-by: ") + e.what());
  }
  if (auto n = args.integer("chunk-tokens", 1, 1'000'000'000)) options.chunk_tokens = static_cast<size_t>(*n);
  if (options.chunk_by == ChunkBy::kTokens && !options.chunk_tokens)
    throw UsageError("--chunk-by tokens needs --chunk-tokens N");
  if (auto n = args.integer("overlap", 0, 1'000'000)) options.overlap = static_cast<size_t>(*n);
  const Embedder embedder = Embedder::load(model_dir(args), load_options(args, "auto"));
  check_prompt_name(run.options, embedder.config());
  to_output(run.output, args.flag("force"), [&](std::ostream& os) {
    embed_lines(run.lines, run.chunk_lines, os, [&](std::span<const std::string> chunk, std::vector<size_t>&) {
      std::vector<std::string> texts;
      std::vector<std::optional<std::vector<TextSpan>>> spans;
      for (size_t i = 0; i < chunk.size(); ++i) {
        try {
          auto [text, given] = parse_document(chunk[i]);
          texts.push_back(std::move(text));
          spans.push_back(std::move(given));
        } catch (const Error& e) {
          throw e.about_input(i);
        }
      }
      write_chunked(os, late_chunks(embedder, texts, options, spans));
    });
  });
  return 0;
}

}  // namespace roberta::cli
