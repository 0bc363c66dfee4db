// Late chunking on the server (roberta/late_chunking.h): POST /embed_late_chunks (ours) and
// Jina AI's `late_chunking: true` on /embed and /v1/embeddings. A document's windows go through the
// batcher as token-state sequences, beside every other request's; a request takes at most
// kWindowsPerJob windows a job, so its memory stays bounded however long its documents are.
#include "roberta/late_chunking.h"
#include "server/handlers.h"
#include "tokenizer/unicode.h"

namespace roberta::server {

namespace {

constexpr size_t kWindowsPerJob = 64;

// Every window of `docs` through the batcher, job after job; q.job only sums the jobs' times.
std::vector<ChunkedText> run_windows(State& s, const Call& call, std::vector<LateChunks>& docs, Queued& q) {
  struct Window {
    size_t doc, k;
  };
  std::vector<Window> windows;
  for (size_t d = 0; d < docs.size(); ++d)
    for (size_t k = 0; k < docs[d].windows().size(); ++k) windows.push_back({d, k});
  q.job->kind = Job::Kind::kTokens;
  q.job->texts.resize(docs.size());  // one (empty) per document: what the per-input metrics count
  for (size_t b = 0; b < windows.size(); b += kWindowsPerJob) {
    Queued part;
    part.job->kind = Job::Kind::kTokens;
    const size_t end = std::min(b + kWindowsPerJob, windows.size());
    for (size_t j = b; j < end; ++j) part.job->texts.push_back(docs[windows[j].doc].windows()[windows[j].k]);
    run_queued(s, call, part);
    for (size_t j = b; j < end; ++j) docs[windows[j].doc].add_window(windows[j].k, part.job->tokens[j - b]);
    if (b == 0) q.job->queue_seconds = part.job->queue_seconds;
    q.job->inference_seconds += part.job->inference_seconds;
  }
  std::vector<ChunkedText> out;
  for (const LateChunks& d : docs) out.push_back(d.finish());
  return out;
}

std::optional<size_t> overlap_of(const json& body) { return get_size(body, "overlap"); }

// "spans" of /embed_late_chunks: for a single input [[start, end], ...]; for a list, one such list
// (or null: chunked by chunk_by) per input.
std::vector<std::optional<std::vector<TextSpan>>> parse_spans(const json& body, const Inputs& inputs) {
  std::vector<std::optional<std::vector<TextSpan>>> out(inputs.items.size());
  const json* spans = field_of(body, "spans");
  if (!spans) return out;
  const auto bad = [](const std::string& m) { return ApiError(422, ErrorType::kValidation, m); };
  const auto pairs = [&](const json& list, const std::string& name) {
    if (!list.is_array()) throw bad("`" + name + "` must be a list of [start, end] pairs");
    std::vector<TextSpan> v;
    for (size_t i = 0; i < list.size(); ++i) {
      const json& p = list[i];
      if (!p.is_array() || p.size() != 2 || !p[0].is_number_unsigned() || !p[1].is_number_unsigned())
        throw bad("`" + name + "[" + std::to_string(i) + "]` must be [start, end], two non-negative integers");
      v.push_back({p[0].get<size_t>(), p[1].get<size_t>()});
    }
    return v;
  };
  if (!inputs.batch) {
    out[0] = pairs(*spans, "spans");
    return out;
  }
  if (!spans->is_array() || spans->size() != inputs.items.size())
    throw bad("`spans` must hold one list of [start, end] pairs (or null) per input: " +
              std::to_string(inputs.items.size()));
  for (size_t i = 0; i < out.size(); ++i)
    if (!(*spans)[i].is_null()) out[i] = pairs((*spans)[i], "spans[" + std::to_string(i) + "]");
  return out;
}

LateChunkingOptions chunking_options(State& s, const json& body) {
  LateChunkingOptions o{.text = embed_options(s, body)};
  o.text.normalize = false;  // the handlers normalise (after `dimensions`)
  if (auto by = get_string(body, "chunk_by")) {
    try {
      o.chunk_by = parse_chunk_by(*by);
    } catch (const Error& e) {
      throw ApiError(422, ErrorType::kValidation, std::string("`chunk_by`: ") + e.what());
    }
  }
  o.chunk_tokens = get_size(body, "chunk_tokens").value_or(0);
  o.overlap = overlap_of(body);
  return o;
}

}  // namespace

Queued run_late_chunked_inputs(State& s, const Call& call, const EmbedRequest& req, const json& body) {
  const auto t0 = Clock::now();
  // Jina AI's API: the inputs are the chunks of one document, joined by a space.
  std::string text;
  std::vector<TextSpan> spans;
  Queued q;
  s.metrics->count("te_embed_count", {}, {}, req.inputs.items.size());  // as run_job
  for (size_t i = 0; i < req.inputs.items.size(); ++i) {
    const Input& in = req.inputs.items[i];
    const std::string name = "`" + req.field + (req.inputs.batch ? "[" + std::to_string(i) + "]`" : "`");
    if (in.is_ids) throw ApiError(422, ErrorType::kValidation, name + ": late chunking takes texts, not token ids");
    if (const auto at = unicode::find_invalid_utf8(in.text))
      throw ApiError(422, ErrorType::kTokenizer, name + ": invalid UTF-8 at byte " + std::to_string(*at), "tokenization");
    if (in.text.find_first_not_of(" \t\n\r\f\v") == std::string::npos)
      throw ApiError(422, ErrorType::kValidation, name + ": late chunking needs text in every input, not white space");
    const size_t start = spans.empty() ? 0 : spans.back().end + 1;  // (after the joining space)
    if (i) text += ' ';
    text += in.text;
    spans.push_back({start, start + code_points(in.text)});
    q.chars += in.chars();
  }
  LateChunkingOptions o{.text = req.options, .overlap = overlap_of(body)};
  o.text.normalize = false;
  std::vector<LateChunks> docs;
  try {
    docs.push_back(prepare_late_chunks(*s.embedder, text, o, &spans));
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInvalidModel) throw api_error(e);
    throw ApiError(422, ErrorType::kValidation, std::string("late chunking of the inputs joined by spaces: ") + e.what());
  }
  q.tokenization = seconds(Clock::now() - t0);
  ChunkedText out = std::move(run_windows(s, call, docs, q).front());
  q.tokens = out.tokens;
  q.job->texts.resize(req.inputs.items.size());
  q.job->pooled = std::move(out.embeddings);
  return q;
}

// Ours: {"inputs": str | [str], "spans", "chunk_by", "chunk_tokens", "overlap", "normalize",
// "prompt_name"} gives one {"spans", "embeddings", "tokens", "windows"} per input, as
// `roberta embed --late-chunking` writes them.
Reply embed_late_chunks(State& s, const Call& call) {
  const json body = parse_body(call.body);
  const Inputs inputs = parse_inputs(body, "inputs", s.options.max_client_batch_size, false);
  const LateChunkingOptions options = chunking_options(s, body);
  const bool normalize = get_bool(body, "normalize", true);
  const auto spans = parse_spans(body, inputs);
  s.metrics->count("te_request_count", "method", method_label(inputs));
  s.metrics->count("te_embed_count", {}, {}, inputs.items.size());
  const auto t0 = Clock::now();
  Queued q;
  std::vector<LateChunks> docs;
  for (size_t i = 0; i < inputs.items.size(); ++i) {
    try {
      docs.push_back(prepare_late_chunks(*s.embedder, inputs.items[i].text, options, spans[i] ? &*spans[i] : nullptr));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kInvalidModel) throw api_error(e);
      throw ApiError(422, ErrorType::kValidation, input_message(e.what(), inputs.batch, i), "tokenization");
    }
    q.chars += inputs.items[i].chars();
  }
  q.tokenization = seconds(Clock::now() - t0);
  std::vector<ChunkedText> out = run_windows(s, call, docs, q);
  Reply r;
  r.body = "[";
  for (size_t d = 0; d < out.size(); ++d) {
    ChunkedText& c = out[d];
    q.tokens += c.tokens;
    r.body += d ? ",{\"spans\":[" : "{\"spans\":[";
    for (size_t i = 0; i < c.spans.size(); ++i)
      r.body += (i ? ",[" : "[") + std::to_string(c.spans[i].start) + "," + std::to_string(c.spans[i].end) + "]";
    r.body += "],\"embeddings\":[";
    for (size_t i = 0; i < c.embeddings.rows; ++i) {
      std::span<float> row(c.embeddings.row(i), c.embeddings.cols);
      if (normalize) l2_normalize(row);
      if (i) r.body += ',';
      append_floats(r.body, row.data(), row.size());
    }
    r.body += "],\"tokens\":" + std::to_string(c.tokens) + ",\"windows\":" + std::to_string(c.windows) + "}";
  }
  r.body += "]";
  timing_headers(s, call, q, r);
  s.metrics->count("te_request_success", "method", method_label(inputs));
  return r;
}

}  // namespace roberta::server
