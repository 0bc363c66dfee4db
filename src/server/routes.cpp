// The route handlers of TEI's /embed, /embed_all, /similarity, /tokenize, /decode, /info, /health
// (also GET / and /ping), /metrics, POST / (/invocations) and /vertex, OpenAI's /v1/embeddings and /v1/models,
// and the table of every route (/predict, /rerank and /fill_mask are in task_routes.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>

#include "roberta/runtime.h"
#include "server/handlers.h"

#ifndef ROBERTA_VERSION
#define ROBERTA_VERSION "0.0.0"
#endif

namespace roberta::server {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
std::string ms(double secs) { return std::to_string(static_cast<long long>(secs * 1000)); }

namespace {
// TEI's per-input metrics: te_embed_* for the embedding routes, te_predict_* for /predict and
// /rerank (each input, or pair, one; fill-mask has none). The handlers count te_*_count.
const char* per_input_metric(const Job& job) {
  switch (job.kind) {
    case Job::Kind::kPooled:
    case Job::Kind::kTokens:
    case Job::Kind::kSparse:
    case Job::Kind::kM3:
      return "te_embed";
    case Job::Kind::kSequenceLogits:
      return "te_predict";
    default:
      return nullptr;
  }
}
}  // namespace

void run_queued(State& s, const Call& call, Queued& q) {
  s.batcher->submit(q.job);
  if (!s.batcher->wait(*q.job, [&] { return s.connections->client_alive(call.peer); }))
    throw ApiError(499, ErrorType::kBackend, "the client closed the connection before the answer", "dropped");
  if (q.job->error) throw api_error(*q.job->error);
}

void timing_headers(State& s, const Call& call, const Queued& q, Reply& r) {
  const size_t n = std::max<size_t>(1, q.job->size());
  const double total = seconds(Clock::now() - call.start);
  const double inference = q.job->inference_seconds / static_cast<double>(n);
  r.headers = {{"x-compute-type", "cpu"},
               {"x-compute-time", ms(total)},
               {"x-compute-characters", std::to_string(q.chars)},
               {"x-compute-tokens", std::to_string(q.tokens)},
               {"x-total-time", ms(total)},
               {"x-tokenization-time", ms(q.tokenization)},
               {"x-queue-time", ms(q.job->queue_seconds)},
               {"x-inference-time", ms(inference)}};
  s.metrics->observe("te_request_duration", total);
  s.metrics->observe("te_request_tokenization_duration", q.tokenization);
  s.metrics->observe("te_request_queue_duration", q.job->queue_seconds);
  s.metrics->observe("te_request_inference_duration", inference);
  if (const char* m = per_input_metric(*q.job)) {
    const std::string name(m);
    s.metrics->count(name + "_success", {}, {}, n);
    for (size_t i = 0; i < n; ++i) {
      s.metrics->observe(name + "_duration", total);
      s.metrics->observe(name + "_tokenization_duration", q.tokenization / static_cast<double>(n));
      s.metrics->observe(name + "_queue_duration", q.job->queue_seconds);
      s.metrics->observe(name + "_inference_duration", inference);
    }
  }
}

namespace {

using ordered_json = nlohmann::ordered_json;

Embedder& embedder(State& s) { return *s.embedder; }

}  // namespace

// ---------------------------------------------------------------- embeddings through the batcher

// TEI's token-id input: the ids decoded with their special tokens and encoded again without adding
// any, so that ids from /tokenize (<s> ... </s>) embed as their text does and ids without them embed
// without them; with a prompt, decoded without special tokens and embedded as prompt + text.
PreparedText prepare_ids(State& s, std::span<const int32_t> ids, const EmbedOptions& o) {
  const Embedder& e = embedder(s);
  const int64_t vocab = e.model().config().vocab_size;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      throw Error("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                  " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  // (TEI: a prompt that is set, even an empty one, takes this way)
  if (o.prompt_name || s.default_prompt) return e.prepare(e.tokenizer().decode(ids, true), o);
  EncodeOptions plain;
  plain.add_special_tokens = false;
  PreparedText p;
  p.ids = e.tokenizer().encode(e.tokenizer().decode(ids, false), plain).ids;
  if (p.ids.empty()) throw Error("the token ids decode to no tokens");
  if (const size_t max_len = e.max_tokens(o); p.ids.size() > max_len) {
    if (!o.truncate)
      throw Error(std::to_string(p.ids.size()) + " tokens, more than the " + std::to_string(max_len) + " allowed");
    const auto cut = static_cast<ptrdiff_t>(p.ids.size() - max_len);
    if (o.truncation_side == Side::kLeft)
      p.ids.erase(p.ids.begin(), p.ids.begin() + cut);
    else
      p.ids.resize(max_len);
    p.truncated = true;
  }
  return p;
}

// Prepares every input on this thread, queues them as one Job and waits for its rows.
Queued run_job(State& s, const Call& call, const EmbedRequest& req, Job::Kind kind) {
  const auto t0 = Clock::now();
  Queued out;
  out.job->kind = kind;
  s.metrics->count("te_embed_count", {}, {}, req.inputs.items.size());  // as TEI: every input, before its tokenization
  out.job->texts.reserve(req.inputs.items.size());
  for (size_t i = 0; i < req.inputs.items.size(); ++i) {
    const Input& in = req.inputs.items[i];
    try {
      out.job->texts.push_back(in.is_ids ? prepare_ids(s, in.ids, req.options)
                                         : embedder(s).prepare(in.text, req.options));
    } catch (const Error& e) {
      throw ApiError(422, in.is_ids ? ErrorType::kValidation : ErrorType::kTokenizer,
                     req.names.empty() ? input_message(e.what(), req.inputs.batch, i, req.field)
                                       : named_input_message(e.what(), req.names[i]),
                     "tokenization");
    }
    const size_t n = out.job->texts.back().ids.size();
    out.tokens += n;
    out.chars += in.chars();
    s.metrics->observe("te_request_input_length", static_cast<double>(n));
  }
  out.tokenization = seconds(Clock::now() - t0);
  run_queued(s, call, out);
  return out;
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
  o.strip = false;  // inputs are tokenized as given, as TEI does (sentence-transformers strips them)
  o.truncate = get_bool(body, "truncate", s.options.auto_truncate);
  o.truncation_side = get_truncation_side(body);
  o.prompt_name = get_string(body, "prompt_name");
  if (o.prompt_name && !embedder(s).config().prompts.count(*o.prompt_name))
    throw ApiError(422, ErrorType::kValidation, "prompt name \"" + *o.prompt_name + "\" is not one of the model's prompts");
  if (!o.prompt_name) o.prompt = s.default_prompt.value_or("");  // TEI's --default-prompt(-name), not the folder's
  return o;
}

namespace {

Reply embed(State& s, const Call& call) {
  const json body = parse_body(call.body);
  EmbedRequest req{parse_inputs(body, "inputs", s.options.max_client_batch_size), embed_options(s, body),
                   get_bool(body, "normalize", true), get_size(body, "dimensions")};
  const QuantizeRequest quantize = quantize_request(body);
  const std::string format = get_string(body, "encoding_format").value_or("float");  // ours, as OpenAI's
  if (format != "float" && format != "base64")
    throw ApiError(422, ErrorType::kValidation, "`encoding_format` must be \"float\" or \"base64\"");
  s.metrics->count("te_request_count", "method", method_label(req.inputs));
  check_dimensions(s, req);
  check_quantize(s, quantize, req.dimensions.value_or(embedder(s).dimension()));
  Queued e = get_bool(body, "late_chunking", false) ? run_late_chunked_inputs(s, call, req, body)
                                                    : run_job(s, call, req, Job::Kind::kPooled);
  Reply r;
  r.body = "[";
  for (const std::string& row : row_texts(s, quantize, finished_rows(req, *e.job), format == "base64"))
    r.body += (r.body.size() > 1 ? "," : "") + row;
  r.body += "]";
  timing_headers(s, call, e, r);
  s.metrics->count("te_request_success", "method", method_label(req.inputs));
  return r;
}

// TEI's /similarity (the sentence-similarity task): {"inputs": {"source_sentence": str,
// "sentences": [str]}, "parameters": {truncate, truncation_direction, prompt_name}} answers the
// cosine of the source sentence's embedding with each sentence's, in order. The source counts
// against --max-client-batch-size too, as in TEI.
Reply similarity(State& s, const Call& call) {
  const json body = parse_body(call.body);
  const auto bad = [](const std::string& m) { return ApiError(400, ErrorType::kValidation, m); };
  const json* in = field_of(body, "inputs");
  if (!in) throw bad("missing field `inputs`");
  if (!in->is_object()) throw bad("`inputs` must be an object: {\"source_sentence\": str, \"sentences\": [str]}");
  const json* source = field_of(*in, "source_sentence");
  const json* sentences = field_of(*in, "sentences");
  if (!source) throw bad("missing field `inputs.source_sentence`");
  if (!source->is_string()) throw bad("`inputs.source_sentence` must be a string");
  if (!sentences) throw bad("missing field `inputs.sentences`");
  if (!sentences->is_array()) throw bad("`inputs.sentences` must be a list of strings");
  if (sentences->empty()) throw ApiError(400, ErrorType::kEmpty, "`inputs.sentences` cannot be empty");
  const size_t n = sentences->size() + 1;
  if (n > s.options.max_client_batch_size)
    throw ApiError(413, ErrorType::kValidation,
                   "batch size " + std::to_string(n) + " > maximum allowed batch size " +
                       std::to_string(s.options.max_client_batch_size),
                   "batch_size");
  const json* params = field_of(body, "parameters");
  if (params && !params->is_object()) throw bad("`parameters` must be an object");
  EmbedRequest req{{}, embed_options(s, params ? *params : json::object()), false, {}};
  req.inputs.batch = true;
  req.names.push_back("inputs.source_sentence");
  req.inputs.items.push_back({.is_ids = false, .text = source->get<std::string>(), .ids = {}});
  for (size_t i = 0; i < sentences->size(); ++i) {
    const json& t = (*sentences)[i];
    if (!t.is_string()) throw bad("`inputs.sentences` must be a list of strings");
    req.names.push_back("inputs.sentences[" + std::to_string(i) + "]");
    req.inputs.items.push_back({.is_ids = false, .text = t.get<std::string>(), .ids = {}});
  }
  for (size_t i = 0; i < n; ++i)
    if (req.inputs.items[i].text.empty())
      throw ApiError(400, ErrorType::kEmpty, "`" + req.names[i] + "` cannot be empty");
  s.metrics->count("te_request_count", "method", "batch");
  Queued e = run_job(s, call, req, Job::Kind::kPooled);
  // The cosine in double (TEI: simsimd's; a zero vector has similarity 0, two have 1, as there).
  const Matrix& m = e.job->pooled;
  std::vector<float> out;
  for (size_t r = 1; r < m.rows; ++r) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t k = 0; k < m.cols; ++k) {
      const double a = m.row(0)[k], b = m.row(r)[k];
      ab += a * b, aa += a * a, bb += b * b;
    }
    out.push_back(aa == 0 && bb == 0 ? 1.0f : ab == 0 ? 0.0f : static_cast<float>(ab / std::sqrt(aa * bb)));
  }
  Reply r;
  append_floats(r.body, out.data(), out.size());
  timing_headers(s, call, e, r);
  s.metrics->count("te_request_success", "method", "batch");
  return r;
}

Reply embed_all(State& s, const Call& call) {
  const json body = parse_body(call.body);
  EmbedRequest req{parse_inputs(body, "inputs", s.options.max_client_batch_size), embed_options(s, body), false, {}};
  s.metrics->count("te_request_count", "method", method_label(req.inputs));
  Queued e = run_job(s, call, req, Job::Kind::kTokens);
  Reply r;
  append_matrices(r.body, e.job->tokens);
  timing_headers(s, call, e, r);
  s.metrics->count("te_request_success", "method", method_label(req.inputs));
  return r;
}

Reply openai_embeddings(State& s, const Call& call) {
  const json body = parse_body(call.body);
  EmbedRequest req{parse_inputs(body, "input", s.options.max_client_batch_size), {}, true, get_size(body, "dimensions"),
                   "input"};
  req.options.truncate = s.options.auto_truncate;
  req.options.strip = false;  // as /embed
  req.options.prompt = s.default_prompt.value_or("");
  const std::string format = get_string(body, "encoding_format").value_or("float");
  if (format != "float" && format != "base64")
    throw ApiError(400, ErrorType::kValidation, "`encoding_format` must be \"float\" or \"base64\"");
  const QuantizeRequest quantize = quantize_request(body);
  get_string(body, "model");  // any name is accepted (one model is served), as TEI does
  get_string(body, "user");
  s.metrics->count("te_request_count", "method", method_label(req.inputs));
  check_dimensions(s, req);
  check_quantize(s, quantize, req.dimensions.value_or(embedder(s).dimension()));
  Queued e = get_bool(body, "late_chunking", false) ? run_late_chunked_inputs(s, call, req, body)
                                                    : run_job(s, call, req, Job::Kind::kPooled);
  Reply r;
  r.body = "{\"object\":\"list\",\"data\":[";
  const std::vector<std::string> rows = row_texts(s, quantize, finished_rows(req, *e.job), format == "base64");
  for (size_t i = 0; i < rows.size(); ++i) {  // (OpenAI's and TEI's field order: object, embedding, index)
    r.body += i ? ",{\"object\":\"embedding\",\"embedding\":" : "{\"object\":\"embedding\",\"embedding\":";
    r.body += rows[i] + ",\"index\":" + std::to_string(i) + "}";
  }
  const std::string tokens = std::to_string(e.tokens);
  r.body += "],\"model\":" + json_string(s.options.served_model_name) + ",\"usage\":{\"prompt_tokens\":" + tokens +
            ",\"total_tokens\":" + tokens + "}}";
  timing_headers(s, call, e, r);
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

// ---------------------------------------------------------------- tokenizer

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
  } else {
    prompt = s.default_prompt.value_or("");
  }
  ordered_json out = ordered_json::array();
  for (size_t i = 0; i < in.items.size(); ++i) {
    const std::string text = prompt + in.items[i].text;
    Encoding e;
    try {
      e = embedder(s).tokenizer().encode(text, o);
    } catch (const Error& err) {
      throw ApiError(422, ErrorType::kTokenizer, input_message(err.what(), in.batch, i), "tokenization");
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
  // The lists by pointer: copying a json value recurses into it, and a body of deeply nested
  // arrays would overflow the stack.
  std::vector<const json*> lists;
  if ((*ids)[0].is_array())
    for (const auto& list : *ids) lists.push_back(&list);
  else
    lists.push_back(ids);
  if (lists.size() > s.options.max_client_batch_size)
    throw ApiError(413, ErrorType::kValidation,
                   "batch size " + std::to_string(lists.size()) + " > maximum allowed batch size " +
                       std::to_string(s.options.max_client_batch_size),
                   "batch_size");
  const bool skip = get_bool(body, "skip_special_tokens", true);
  json out = json::array();
  for (const json* list : lists) {
    if (!list->is_array()) throw ApiError(400, ErrorType::kValidation, "`ids` must be [int] or [[int]]");
    if (list->empty()) throw ApiError(400, ErrorType::kEmpty, "`ids` cannot be empty");
    std::vector<int32_t> v;
    for (const auto& x : *list) {
      // TEI's ids are u32; the tokenizer's decode skips those outside the vocabulary (as HF's does).
      if (!x.is_number_unsigned() || x.get<uint64_t>() > UINT32_MAX)
        throw ApiError(400, ErrorType::kValidation, "`ids` must be [int] or [[int]] of unsigned 32-bit integers");
      const uint64_t id = x.get<uint64_t>();
      v.push_back(id > INT32_MAX ? -1 : static_cast<int32_t>(id));
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

// ---------------------------------------------------------------- service routes

Reply health(State& s, const Call&) {
  if (s.draining) throw ApiError(503, ErrorType::kUnhealthy, "the server is shutting down", "unhealthy");
  return Reply{.status = 200, .body = "", .content_type = "text/plain", .headers = {}};
}

// TEI's model_type: a sequence-classification head with several labels is a "classifier", with
// one label a "reranker" (its id2label and label2id either way), else an "embedding" model (pooling
// "splade" for a SparseEncoder folder).
ordered_json model_type(State& s) {
  if (!s.cross_encoder)
    return {{"embedding",
             {{"pooling", embedder(s).config().splade ? "splade" : pooling_name(embedder(s).default_pooling())}}}};
  const ModelConfig& c = s.cross_encoder->model_config();
  ordered_json id2label = ordered_json::object(), label2id = ordered_json::object();
  for (size_t i = 0; i < c.id2label.size(); ++i) id2label[std::to_string(i)] = c.id2label[i];
  for (const auto& [label, id] : c.label2id) label2id[label] = id;
  return {{c.num_labels() > 1 ? "classifier" : "reranker", {{"id2label", id2label}, {"label2id", label2id}}}};
}

// What runs here (roberta/runtime.h), as `roberta info` shows it.
ordered_json runtime_json() {
  const RuntimeInfo r = runtime_info();
  return {{"cpu", r.cpu}, {"isa", r.isa}, {"matrix_products", r.matrix_products}, {"attention", r.attention},
          {"default_dtype", r.default_dtype}};
}

Reply info(State& s, const Call&) {
  const Embedder& e = embedder(s);
  ordered_json j = {
      {"model_id", s.options.model_id},
      {"model_sha", nullptr},
      {"model_dtype", s.model_dtype},
      {"served_model_name", s.options.served_model_name},
      {"model_type", model_type(s)},
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
      {"fill_mask", s.fill_mask != nullptr},
      {"runtime", runtime_json()}};
  Reply r;
  r.body = j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  return r;
}

// TEI's POST / and /invocations (Inference Endpoints' and SageMaker's route): /predict for a
// classifier, /rerank for a reranker, /embed for an embedding model, or /similarity when the
// environment has TEI's TASK=sentence-similarity. POST / on a classifier answers in the shape of
// Hugging Face's text-classification task, which its clients read (TEI's /predict shape fails there).
Reply root(State& s, const Call& call) {
  if (s.cross_encoder) return s.cross_encoder->model_config().num_labels() > 1 ? classify_task(s, call) : rerank(s, call);
  if (s.options.root_task == "sentence-similarity") return similarity(s, call);
  return s.embedder->config().splade ? embed_sparse(s, call) : embed(s, call);
}

Reply invocations(State& s, const Call& call) {
  if (s.cross_encoder) return s.cross_encoder->model_config().num_labels() > 1 ? predict(s, call) : rerank(s, call);
  return root(s, call);
}

// TEI's /vertex (Google Vertex AI's prediction route): {"instances": [request, ...]} answers
// {"predictions": [answer, ...]}, each instance a request of /rerank when it has a "query" string and
// "texts" strings, else of /predict on a classifier or reranker, else of /embed; checked first, then
// run one after the other. An error of an instance names it ("instances[1]: ...").
Reply vertex(State& s, const Call& call) {
  const json body = parse_body(call.body);
  const json* it = field_of(body, "instances");
  if (!it) throw ApiError(400, ErrorType::kValidation, "missing field `instances`");
  if (!it->is_array()) throw ApiError(400, ErrorType::kValidation, "`instances` must be a list of requests");
  // TEI runs the instances at once, each holding permits of --max-concurrent-requests, so more
  // than that fail there (429, as overload); here a 413, as a request over a size limit, which a
  // retry cannot cure.
  if (it->size() > s.options.max_concurrent_requests)
    throw ApiError(413, ErrorType::kValidation,
                   std::to_string(it->size()) + " instances, more than --max-concurrent-requests " +
                       std::to_string(s.options.max_concurrent_requests),
                   "batch_size");
  const auto is_strings = [](const json& v) {
    return v.is_array() && std::all_of(v.begin(), v.end(), [](const json& t) { return t.is_string(); });
  };
  const auto name = [](size_t i) { return "instances[" + std::to_string(i) + "]"; };
  std::vector<Reply (*)(State&, const Call&)> handlers;  // each instance's route
  for (size_t i = 0; i < it->size(); ++i) {  // every instance's shape first, as TEI parses them all first
    const json& instance = (*it)[i];
    if (!instance.is_object()) throw ApiError(400, ErrorType::kValidation, "`" + name(i) + "` must be an object");
    const bool rerank_request = instance.contains("query") && instance["query"].is_string() &&
                                instance.contains("texts") && is_strings(instance["texts"]);
    try {
      if (!rerank_request && s.cross_encoder) parse_predict_inputs(instance, s.options.max_client_batch_size);
      if (!rerank_request && !s.cross_encoder) parse_inputs(instance, "inputs", s.options.max_client_batch_size);
    } catch (const ApiError& e) {
      throw ApiError(e.status, e.type, name(i) + ": " + e.what(), e.metric);
    }
    handlers.push_back(rerank_request ? rerank : s.cross_encoder ? predict : embed);
  }
  Reply out;
  out.body = "{\"predictions\":[";
  for (size_t i = 0; i < it->size(); ++i) {
    if (s.draining) throw ApiError(503, ErrorType::kUnhealthy, "the server is shutting down", "unhealthy");
    if (!s.connections->client_alive(call.peer))
      throw ApiError(499, ErrorType::kBackend, "the client closed the connection before the answer", "dropped");
    const std::string text = (*it)[i].dump();
    const Call one{text, call.peer, Clock::now()};  // (each instance's durations its own, as in TEI)
    try {
      out.body += (i ? "," : "") + handlers[i](s, one).body;
    } catch (const ApiError& e) {
      throw ApiError(e.status, e.type, name(i) + ": " + e.what(), e.metric);
    } catch (const Error& e) {
      const ApiError a = api_error(e);
      throw ApiError(a.status, a.type, name(i) + ": " + e.what(), a.metric);
    }
  }
  out.body += "]}";
  return out;
}

Reply metrics(State& s, const Call&) {
  return Reply{.status = 200, .body = s.metrics->render(), .content_type = "text/plain; version=0.0.4", .headers = {}};
}

constexpr Route kRoutes[] = {
    {"GET", "/health", Style::kTei, true, false, health},
    {"GET", "/", Style::kTei, true, false, health},      // the Inference API's health route
    {"GET", "/ping", Style::kTei, true, false, health},  // SageMaker's
    {"POST", "/", Style::kTei, false, true, root},
    {"POST", "/invocations", Style::kTei, false, true, invocations},
    {"POST", "/similarity", Style::kTei, false, true, similarity},
    {"POST", "/vertex", Style::kTei, false, true, vertex},
    {"GET", "/metrics", Style::kTei, true, false, metrics},
    {"GET", "/info", Style::kTei, false, false, info},
    {"POST", "/embed", Style::kTei, false, true, embed},
    {"POST", "/embed_all", Style::kTei, false, true, embed_all},
    {"POST", "/embed_sparse", Style::kTei, false, true, embed_sparse},
    {"POST", "/embed_late_chunks", Style::kTei, false, true, embed_late_chunks},
    {"POST", "/embed_multivector", Style::kTei, false, true, embed_multivector},
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
