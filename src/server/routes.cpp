// The route handlers: TEI's /embed, /embed_all, /tokenize, /decode, /info, /health, /metrics,
// OpenAI's /v1/embeddings and /v1/models, our /fill_mask, and /predict and /rerank over the
// classification pipelines (TextClassifier, CrossEncoder).
#include <algorithm>
#include <thread>

#include "server/routes.h"

#ifndef ROBERTA_VERSION
#define ROBERTA_VERSION "0.0.0"
#endif

namespace roberta::server {
namespace {

using ordered_json = nlohmann::ordered_json;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
std::string ms(double s) { return std::to_string(static_cast<long long>(s * 1000)); }

Embedder& embedder(State& s) { return *s.embedder; }

// ---------------------------------------------------------------- embeddings through the batcher

struct EmbedRequest {
  Inputs inputs;
  EmbedOptions options;
  bool normalize = true;
  std::optional<size_t> dimensions;
};

struct Embedded {
  std::shared_ptr<Job> job;
  size_t tokens = 0, chars = 0;
  double tokenization = 0;
};

// Prepares every input on this thread, queues them as one Job and waits for its rows.
Embedded run_job(State& s, const Call& call, const EmbedRequest& req, Job::Kind kind) {
  const auto t0 = Clock::now();
  Embedded out;
  out.job = std::make_shared<Job>();
  out.job->kind = kind;
  for (size_t i = 0; i < req.inputs.items.size(); ++i) {
    const Input& in = req.inputs.items[i];
    try {
      out.job->texts.push_back(in.is_ids ? embedder(s).prepare_ids(in.ids, req.options)
                                         : embedder(s).prepare(in.text, req.options));
    } catch (const Error& e) {
      const std::string where = req.inputs.batch ? "input " + std::to_string(i) + ": " : "";
      throw ApiError(422, in.is_ids ? ErrorType::kValidation : ErrorType::kTokenizer, where + e.what(), "tokenization");
    }
    const size_t n = out.job->texts.back().ids.size();
    out.tokens += n;
    out.chars += in.chars();
    s.metrics->observe("te_request_input_length", static_cast<double>(n));
  }
  out.tokenization = seconds(Clock::now() - t0);
  s.batcher->submit(out.job);
  if (!s.batcher->wait(*out.job, [&] { return s.connections->client_alive(call.peer); }))
    throw ApiError(499, ErrorType::kBackend, "the client closed the connection before the answer", "dropped");
  if (out.job->error) throw api_error(*out.job->error);
  return out;
}

// TEI's timing headers (milliseconds; per-input times averaged as TEI does) and metrics.
void finish(State& s, const Call& call, const Embedded& e, Reply& r) {
  const size_t n = std::max<size_t>(1, e.job->texts.size());
  const double total = seconds(Clock::now() - call.start);
  const double inference = e.job->inference_seconds / static_cast<double>(n);
  r.headers = {{"x-compute-type", "cpu"},
               {"x-compute-time", ms(total)},
               {"x-compute-characters", std::to_string(e.chars)},
               {"x-compute-tokens", std::to_string(e.tokens)},
               {"x-total-time", ms(total)},
               {"x-tokenization-time", ms(e.tokenization)},
               {"x-queue-time", ms(e.job->queue_seconds)},
               {"x-inference-time", ms(inference)}};
  s.metrics->observe("te_request_duration", total);
  s.metrics->observe("te_request_tokenization_duration", e.tokenization);
  s.metrics->observe("te_request_queue_duration", e.job->queue_seconds);
  s.metrics->observe("te_request_inference_duration", inference);
}

const char* method_label(const Inputs& in) { return in.batch ? "batch" : "single"; }

void check_dimensions(State& s, const EmbedRequest& req) {
  if (!req.dimensions) return;
  if (*req.dimensions == 0) throw ApiError(422, ErrorType::kValidation, "`dimensions` should be positive");
  if (*req.dimensions > embedder(s).dimension())
    throw ApiError(422, ErrorType::kValidation,
                   "`dimensions` should be smaller than the maximum embedding dimension (" +
                       std::to_string(embedder(s).dimension()) + ")");
}

// The pooled rows, cut to `dimensions` and then L2-normalised when asked (as TEI does).
std::vector<std::span<float>> finished_rows(const EmbedRequest& req, Job& job) {
  std::vector<std::span<float>> rows;
  for (size_t i = 0; i < job.pooled.rows; ++i) {
    std::span<float> row(job.pooled.row(i), req.dimensions.value_or(job.pooled.cols));
    if (req.normalize) l2_normalize(row);
    rows.push_back(row);
  }
  return rows;
}

EmbedOptions embed_options(State& s, const json& body) {
  EmbedOptions o;
  o.truncate = get_bool(body, "truncate", s.options.auto_truncate);
  if (auto side = get_string(body, "truncation_direction")) {
    if (*side == "Left" || *side == "left")
      o.truncation_side = Side::kLeft;
    else if (*side != "Right" && *side != "right")
      throw ApiError(400, ErrorType::kValidation, "`truncation_direction` must be \"Left\" or \"Right\"");
  }
  o.prompt_name = get_string(body, "prompt_name");
  if (o.prompt_name && !embedder(s).config().prompts.count(*o.prompt_name))
    throw ApiError(422, ErrorType::kValidation, "prompt name \"" + *o.prompt_name + "\" is not one of the model's prompts");
  return o;
}

Reply embed(State& s, const Call& call) {
  const json body = parse_body(call.body);
  EmbedRequest req{parse_inputs(body, "inputs", s.options.max_client_batch_size), embed_options(s, body),
                   get_bool(body, "normalize", true), get_size(body, "dimensions")};
  s.metrics->count("te_request_count", "method", method_label(req.inputs));
  check_dimensions(s, req);
  Embedded e = run_job(s, call, req, Job::Kind::kPooled);
  Reply r;
  r.body = "[";
  for (const auto& row : finished_rows(req, *e.job)) {
    if (r.body.size() > 1) r.body += ',';
    append_floats(r.body, row.data(), row.size());
  }
  r.body += "]";
  finish(s, call, e, r);
  s.metrics->count("te_request_success", "method", method_label(req.inputs));
  return r;
}

Reply embed_all(State& s, const Call& call) {
  const json body = parse_body(call.body);
  EmbedRequest req{parse_inputs(body, "inputs", s.options.max_client_batch_size), embed_options(s, body), false, {}};
  s.metrics->count("te_request_count", "method", method_label(req.inputs));
  Embedded e = run_job(s, call, req, Job::Kind::kTokens);
  Reply r;
  r.body = "[";
  for (size_t i = 0; i < e.job->tokens.size(); ++i) {
    const Matrix& m = e.job->tokens[i];
    r.body += i ? ",[" : "[";
    for (size_t t = 0; t < m.rows; ++t) {
      if (t) r.body += ',';
      append_floats(r.body, m.row(t), m.cols);
    }
    r.body += "]";
  }
  r.body += "]";
  finish(s, call, e, r);
  s.metrics->count("te_request_success", "method", method_label(req.inputs));
  return r;
}

Reply openai_embeddings(State& s, const Call& call) {
  const json body = parse_body(call.body);
  EmbedRequest req{parse_inputs(body, "input", s.options.max_client_batch_size), {}, true, get_size(body, "dimensions")};
  req.options.truncate = s.options.auto_truncate;
  const std::string format = get_string(body, "encoding_format").value_or("float");
  if (format != "float" && format != "base64")
    throw ApiError(400, ErrorType::kValidation, "`encoding_format` must be \"float\" or \"base64\"");
  get_string(body, "model");  // any name is accepted (one model is served), as TEI does
  get_string(body, "user");
  s.metrics->count("te_request_count", "method", method_label(req.inputs));
  check_dimensions(s, req);
  Embedded e = run_job(s, call, req, Job::Kind::kPooled);
  Reply r;
  r.body = "{\"object\":\"list\",\"data\":[";
  const auto rows = finished_rows(req, *e.job);
  for (size_t i = 0; i < rows.size(); ++i) {
    r.body += i ? ",{\"object\":\"embedding\",\"index\":" : "{\"object\":\"embedding\",\"index\":";
    r.body += std::to_string(i) + ",\"embedding\":";
    if (format == "base64")
      r.body += "\"" + base64_floats(rows[i].data(), rows[i].size()) + "\"";
    else
      append_floats(r.body, rows[i].data(), rows[i].size());
    r.body += "}";
  }
  const std::string tokens = std::to_string(e.tokens);
  r.body += "],\"model\":" + json_string(s.options.served_model_name) + ",\"usage\":{\"prompt_tokens\":" + tokens +
            ",\"total_tokens\":" + tokens + "}}";
  finish(s, call, e, r);
  s.metrics->count("te_request_success", "method", method_label(req.inputs));
  return r;
}

Reply openai_models(State& s, const Call&) {
  Reply r;
  r.body = ordered_json{{"object", "list"},
                        {"data", {{{"id", s.options.served_model_name}, {"object", "model"}, {"created", 0},
                                   {"owned_by", "roberta.cpp"}}}}}
               .dump();
  return r;
}

// ---------------------------------------------------------------- fill-mask, tokenizer

Reply fill_mask(State& s, const Call& call) {
  const json body = parse_body(call.body);
  const Inputs in = parse_inputs(body, "inputs", s.options.max_client_batch_size, /*allow_ids=*/false);
  if (!s.fill_mask)
    throw ApiError(424, ErrorType::kBackend, "the model has no MLM head (lm_head.*) or no <mask> token", "model_type");
  FillMaskOptions o;
  if (auto k = get_size(body, "top_k")) {
    if (*k == 0) throw ApiError(422, ErrorType::kValidation, "`top_k` should be positive");
    o.top_k = *k;
  }
  if (const auto it = body.find("targets"); it != body.end() && !it->is_null()) {
    if (it->is_string()) {
      o.targets.push_back(it->get<std::string>());
    } else if (it->is_array() && std::all_of(it->begin(), it->end(), [](const json& t) { return t.is_string(); })) {
      for (const auto& t : *it) o.targets.push_back(t.get<std::string>());
    } else {
      throw ApiError(400, ErrorType::kValidation, "`targets` must be a string or a list of strings");
    }
  }
  s.metrics->count("te_request_count", "method", method_label(in));
  ordered_json answers = ordered_json::array();
  size_t tokens = 0;
  for (size_t i = 0; i < in.items.size(); ++i) {
    std::vector<std::vector<FillMaskCandidate>> results;
    try {
      results = (*s.fill_mask)(in.items[i].text, o);
      tokens += s.fill_mask->tokenizer().encode(in.items[i].text).size();
    } catch (const Error& e) {
      ApiError err = api_error(e);
      throw ApiError(err.status, err.type, (in.batch ? "input " + std::to_string(i) + ": " : "") + e.what(), err.metric);
    }
    // As `roberta fill-mask --json`: one mask gives a flat list, several a list per mask.
    ordered_json lists = ordered_json::array();
    for (const auto& list : results) {
      ordered_json items = ordered_json::array();
      for (const auto& c : list)
        items.push_back({{"score", c.score}, {"token", c.token}, {"token_str", c.token_str}, {"sequence", c.sequence}});
      lists.push_back(items);
    }
    answers.push_back(results.size() == 1 ? lists[0] : lists);
  }
  Reply r;
  r.body = (in.batch ? answers : answers[0]).dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  r.headers = {{"x-compute-tokens", std::to_string(tokens)},
               {"x-total-time", ms(seconds(Clock::now() - call.start))}};
  s.metrics->count("te_request_success", "method", method_label(in));
  return r;
}

Reply tokenize(State& s, const Call& call) {
  const json body = parse_body(call.body);
  const Inputs in = parse_inputs(body, "inputs", s.options.max_client_batch_size, /*allow_ids=*/false);
  EncodeOptions o;
  o.add_special_tokens = get_bool(body, "add_special_tokens", true);
  std::string prompt;
  if (auto name = get_string(body, "prompt_name")) {
    const auto it = embedder(s).config().prompts.find(*name);
    if (it == embedder(s).config().prompts.end())
      throw ApiError(422, ErrorType::kValidation, "prompt name \"" + *name + "\" is not one of the model's prompts");
    prompt = it->second;
  }
  ordered_json out = ordered_json::array();
  for (size_t i = 0; i < in.items.size(); ++i) {
    const std::string text = prompt + in.items[i].text;
    Encoding e;
    try {
      e = embedder(s).tokenizer().encode(text, o);
    } catch (const Error& err) {
      throw ApiError(422, ErrorType::kTokenizer, (in.batch ? "input " + std::to_string(i) + ": " : "") + err.what(),
                     "tokenization");
    }
    // As TEI: byte offsets, the text they cover; special tokens have their token and no offsets.
    ordered_json tokens = ordered_json::array();
    for (size_t t = 0; t < e.size(); ++t) {
      const bool special = e.special_tokens_mask[t] != 0;
      const auto [start, stop] = e.byte_offsets[t];
      ordered_json tok = {{"id", e.ids[t]},
                          {"text", special ? e.tokens[t] : text.substr(static_cast<size_t>(start), static_cast<size_t>(stop - start))},
                          {"special", special},
                          {"start", nullptr},
                          {"stop", nullptr}};
      if (!special) tok["start"] = start, tok["stop"] = stop;
      tokens.push_back(tok);
    }
    out.push_back(tokens);
  }
  Reply r;
  r.body = out.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  return r;
}

Reply decode(State& s, const Call& call) {
  const json body = parse_body(call.body);
  const json* ids = body.contains("ids") && !body["ids"].is_null() ? &body["ids"] : nullptr;
  if (!ids) throw ApiError(400, ErrorType::kValidation, "missing field `ids`");
  if (!ids->is_array()) throw ApiError(400, ErrorType::kValidation, "`ids` must be [int] or [[int]]");
  if (ids->empty()) throw ApiError(400, ErrorType::kEmpty, "`ids` cannot be empty");
  const bool batch = (*ids)[0].is_array();
  const json lists = batch ? *ids : json::array({*ids});
  if (lists.size() > s.options.max_client_batch_size)
    throw ApiError(413, ErrorType::kValidation,
                   "batch size " + std::to_string(lists.size()) + " > maximum allowed batch size " +
                       std::to_string(s.options.max_client_batch_size),
                   "batch_size");
  const bool skip = get_bool(body, "skip_special_tokens", true);
  json out = json::array();
  for (const auto& list : lists) {
    if (!list.is_array() || list.empty()) throw ApiError(400, ErrorType::kValidation, "`ids` must be [int] or [[int]]");
    std::vector<int32_t> v;
    for (const auto& x : list) {
      if (!x.is_number_integer()) throw ApiError(400, ErrorType::kValidation, "`ids` must be [int] or [[int]]");
      const int64_t id = x.get<int64_t>();
      if (!x.is_number_unsigned() || id >= static_cast<int64_t>(embedder(s).tokenizer().vocab_size()))
        throw ApiError(422, ErrorType::kTokenizer, "token id " + x.dump() + " is outside the vocabulary", "tokenization");
      v.push_back(static_cast<int32_t>(id));
    }
    try {
      out.push_back(embedder(s).tokenizer().decode(v, skip));
    } catch (const Error& e) {
      throw ApiError(422, ErrorType::kTokenizer, e.what(), "tokenization");
    }
  }
  Reply r;
  r.body = out.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

// ---------------------------------------------------------------- classification

// Runs on the handler thread, one forward pass per request (not packed with other requests).
const TextClassifier& classifier(State& s) {
  if (!s.classifier)
    throw ApiError(424, ErrorType::kBackend, "the model has no sequence classification head", "model_type");
  return *s.classifier;
}

// TEI's PredictInput: "text" | ["text", "pair"] (one pair) | a list of those ([["a"], ["a", "b"], "c"]).
std::pair<std::vector<TextInput>, bool> parse_predict_inputs(const json& body, size_t max_batch) {
  const auto it = body.find("inputs");
  if (it == body.end()) throw ApiError(400, ErrorType::kValidation, "missing field `inputs`");
  const auto one = [](const json& v) -> std::optional<TextInput> {
    if (v.is_string()) return TextInput{v.get<std::string>(), std::nullopt};
    if (v.is_array() && v.size() == 1 && v[0].is_string()) return TextInput{v[0].get<std::string>(), std::nullopt};
    if (v.is_array() && v.size() == 2 && v[0].is_string() && v[1].is_string())
      return TextInput{v[0].get<std::string>(), v[1].get<std::string>()};
    return std::nullopt;
  };
  if (auto single = one(*it)) return {{*single}, false};
  if (!it->is_array() || it->empty())
    throw ApiError(400, ErrorType::kValidation, "`inputs` must be a text, a [text, pair] or a non-empty list of those");
  if (it->size() > max_batch)
    throw ApiError(413, ErrorType::kValidation, "batch size " + std::to_string(it->size()) +
                                                    " > maximum allowed batch size " + std::to_string(max_batch));
  std::vector<TextInput> inputs;
  for (size_t i = 0; i < it->size(); ++i) {
    auto item = one((*it)[i]);
    if (!item) throw ApiError(400, ErrorType::kValidation, "inputs[" + std::to_string(i) + "] is not a text or a [text, pair]");
    inputs.push_back(std::move(*item));
  }
  return {inputs, true};
}

Reply predict(State& s, const Call& call) {
  const json body = parse_body(call.body);
  const TextClassifier& c = classifier(s);
  const auto [inputs, batch] = parse_predict_inputs(body, s.options.max_client_batch_size);
  TextClassifyOptions o;
  o.top_k = std::nullopt;  // every label, best first, as TEI answers
  if (get_bool(body, "raw_scores", false)) o.function_to_apply = ClassificationFunction::kNone;
  o.truncation = get_bool(body, "truncate", s.options.auto_truncate);
  s.metrics->count("te_request_count", "method", batch ? "batch" : "single");
  std::vector<std::vector<LabelScore>> results;
  size_t tokens = 0;
  try {
    const TextClassifier::Prepared prepared = c.prepare(inputs, o);
    for (const auto& e : prepared.encodings) tokens += e.size();
    results = c.finish(prepared, c.run(prepared), o);
  } catch (const Error& e) {
    throw api_error(e);
  }
  ordered_json answers = ordered_json::array();
  for (const auto& list : results) {
    ordered_json items = ordered_json::array();
    for (const auto& l : list) items.push_back({{"score", l.score}, {"label", l.label}});
    answers.push_back(items);
  }
  Reply r;
  r.body = (batch ? answers : answers[0]).dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  r.headers = {{"x-compute-tokens", std::to_string(tokens)},
               {"x-total-time", ms(seconds(Clock::now() - call.start))}};
  s.metrics->count("te_request_success", "method", batch ? "batch" : "single");
  return r;
}

// TEI's /rerank: {"query", "texts", "return_text", "raw_scores", "truncate"} -> [{"index", "score", "text"?}],
// best first. Scores use the model's activation (sentence-transformers' CrossEncoder: sigmoid for
// one label); raw_scores gives the logits.
Reply rerank(State& s, const Call& call) {
  const json body = parse_body(call.body);
  classifier(s);
  const auto query = get_string(body, "query");
  if (!query) throw ApiError(400, ErrorType::kValidation, "missing field `query` (a string)");
  const auto texts = body.find("texts");
  if (texts == body.end() || !texts->is_array() ||
      !std::all_of(texts->begin(), texts->end(), [](const json& t) { return t.is_string(); }))
    throw ApiError(400, ErrorType::kValidation, "`texts` must be a list of strings");
  if (texts->empty()) throw ApiError(400, ErrorType::kEmpty, "`texts` cannot be empty");
  if (texts->size() > s.options.max_client_batch_size)
    throw ApiError(413, ErrorType::kValidation, "batch size " + std::to_string(texts->size()) +
                                                    " > maximum allowed batch size " +
                                                    std::to_string(s.options.max_client_batch_size));
  const std::vector<std::string> documents = texts->get<std::vector<std::string>>();
  RankOptions o;
  o.return_documents = get_bool(body, "return_text", false);
  if (get_bool(body, "raw_scores", false)) o.scoring.activation = CrossEncoderActivation::kIdentity;
  if (!get_bool(body, "truncate", s.options.auto_truncate)) {
    const size_t max_len = static_cast<size_t>(s.embedder->model().config().max_sequence_length());
    for (size_t i = 0; i < documents.size(); ++i) {
      const size_t n = s.embedder->tokenizer().encode_pair(*query, documents[i]).size();
      if (n > max_len)
        throw ApiError(422, ErrorType::kValidation, "texts[" + std::to_string(i) + "]: the pair has " +
                                                        std::to_string(n) + " tokens, more than the " +
                                                        std::to_string(max_len) + " allowed");
    }
  }
  s.metrics->count("te_request_count", "method", "batch");
  std::vector<RankedDocument> ranked;
  try {
    ranked = s.cross_encoder->rank(*query, documents, o);
  } catch (const Error& e) {
    throw api_error(e);
  }
  ordered_json out = ordered_json::array();
  for (const auto& d : ranked) {
    ordered_json item = {{"index", d.corpus_id}, {"score", d.score}};
    if (d.text) item["text"] = *d.text;
    out.push_back(item);
  }
  Reply r;
  r.body = out.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  r.headers = {{"x-total-time", ms(seconds(Clock::now() - call.start))}};
  s.metrics->count("te_request_success", "method", "batch");
  return r;
}

// ---------------------------------------------------------------- service routes

Reply health(State& s, const Call&) {
  if (s.draining) throw ApiError(503, ErrorType::kUnhealthy, "the server is shutting down", "unhealthy");
  return Reply{.status = 200, .body = "", .content_type = "text/plain", .headers = {}};
}

Reply info(State& s, const Call&) {
  const Embedder& e = embedder(s);
  ordered_json j = {
      {"model_id", s.options.model_dir},
      {"model_sha", nullptr},
      {"model_dtype", s.model_dtype},
      {"served_model_name", s.options.served_model_name},
      {"model_type", {{"embedding", {{"pooling", pooling_name(e.default_pooling())}}}}},
      {"max_concurrent_requests", s.options.max_concurrent_requests},
      {"max_input_length", e.max_seq_length()},
      {"max_batch_tokens", s.options.max_batch_tokens},
      {"max_batch_requests", s.options.max_batch_requests ? ordered_json(s.options.max_batch_requests) : nullptr},
      {"max_client_batch_size", s.options.max_client_batch_size},
      {"auto_truncate", s.options.auto_truncate},
      {"tokenization_workers", std::max(1u, std::thread::hardware_concurrency())},
      {"version", ROBERTA_VERSION},
      {"sha", nullptr},
      {"docker_label", nullptr},
      // ours: what else the model can do
      {"embedding_dimension", e.dimension()},
      {"fill_mask", s.fill_mask != nullptr}};
  Reply r;
  r.body = j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  return r;
}

Reply metrics(State& s, const Call&) {
  return Reply{.status = 200, .body = s.metrics->render(), .content_type = "text/plain; version=0.0.4", .headers = {}};
}

constexpr Route kRoutes[] = {
    {"GET", "/health", Style::kTei, true, false, health},
    {"GET", "/metrics", Style::kTei, true, false, metrics},
    {"GET", "/info", Style::kTei, false, false, info},
    {"POST", "/embed", Style::kTei, false, true, embed},
    {"POST", "/embed_all", Style::kTei, false, true, embed_all},
    {"POST", "/v1/embeddings", Style::kOpenAi, false, true, openai_embeddings},
    {"POST", "/embeddings", Style::kOpenAi, false, true, openai_embeddings},
    {"GET", "/v1/models", Style::kOpenAi, false, false, openai_models},
    {"POST", "/fill_mask", Style::kTei, false, true, fill_mask},
    {"POST", "/tokenize", Style::kTei, false, false, tokenize},
    {"POST", "/decode", Style::kTei, false, false, decode},
    {"POST", "/predict", Style::kTei, false, true, predict},
    {"POST", "/rerank", Style::kTei, false, true, rerank},
};

}  // namespace

std::span<const Route> routes() { return kRoutes; }

}  // namespace roberta::server
