// The route handlers of the task pipelines: TEI's /predict (TextClassifier; also POST / on a
// classifier, in the shape of HF's text-classification task) and /rerank (CrossEncoder), and our
// /fill_mask (FillMask). Each prepares its inputs on the handler thread,
// queues their token ids on the batcher (kSequenceLogits: /predict and /rerank share passes;
// kMaskLogits), and finishes its own rows with the pipeline's finish step.
#include <algorithm>
#include <functional>

#include "server/handlers.h"

namespace roberta::server {
namespace {

using ordered_json = nlohmann::ordered_json;

const char* method_label(bool batch) { return batch ? "batch" : "single"; }

// The model routes' errors of one input among several name it: "inputs[2]: ...".
ApiError input_error(const Error& e, bool batch, size_t i) {
  const ApiError a = api_error(e);
  return ApiError(a.status, a.type, input_message(e.what(), batch, i), a.metric);
}

// Queues the ids of `encodings` as a job of `kind` and waits for its rows.
template <class Encodings>
void run_encodings(State& s, const Call& call, Queued& q, Job::Kind kind, const Encodings& encodings,
                   Clock::time_point prepare_start) {
  q.job->kind = kind;
  q.job->sequences.reserve(encodings.size());
  for (const Encoding& e : encodings) {
    q.job->sequences.push_back(e.ids);
    q.tokens += e.size();
    s.metrics->observe("te_request_input_length", static_cast<double>(e.size()));
  }
  q.tokenization = seconds(Clock::now() - prepare_start);
  run_queued(s, call, q);
}

Reply json_reply(const ordered_json& body) {
  Reply r;
  r.body = body.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  return r;
}

// ---------------------------------------------------------------- /fill_mask

FillMaskOptions fill_mask_options(const json& body) {
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
  return o;
}

// TEI's tokenizer refuses an empty input with 400 Empty; a pair only when both its texts are empty.
void refuse_empty(const TextInput& in, bool batch, size_t i, const std::string& field = "inputs") {
  if (in.text.empty() && (!in.text_pair || in.text_pair->empty()))
    throw ApiError(400, ErrorType::kEmpty,
                   (batch ? field + "[" + std::to_string(i) + "]" : field) + " cannot be empty");
}

}  // namespace

// TEI's /predict input: "text" | ["text", "pair"] (one pair) | a list of those ([["a"], ["a", "b"], "c"]).
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
    throw ApiError(413, ErrorType::kValidation,
                   "batch size " + std::to_string(it->size()) + " > maximum allowed batch size " +
                       std::to_string(max_batch),
                   "batch_size");
  std::vector<TextInput> inputs;
  for (size_t i = 0; i < it->size(); ++i) {
    auto item = one((*it)[i]);
    if (!item) throw ApiError(400, ErrorType::kValidation, "inputs[" + std::to_string(i) + "] is not a text or a [text, pair]");
    inputs.push_back(std::move(*item));
  }
  return {inputs, true};
}

Reply fill_mask(State& s, const Call& call) {
  const json body = parse_body(call.body);
  const Inputs in = parse_inputs(body, "inputs", s.options.max_client_batch_size, /*allow_ids=*/false);
  if (!s.fill_mask)
    throw ApiError(424, ErrorType::kBackend, "the model has no MLM head (lm_head.*) or no <mask> token", "model_type");
  const FillMask& fill = *s.fill_mask;
  const FillMaskOptions o = fill_mask_options(body);
  s.metrics->count("te_request_count", "method", method_label(in.batch));
  const auto t0 = Clock::now();
  Queued q;
  std::vector<FillMask::Prepared> prepared;
  prepared.reserve(in.items.size());
  for (size_t i = 0; i < in.items.size(); ++i) {
    try {
      prepared.push_back(fill.prepare(in.items[i].text));
    } catch (const Error& e) {
      throw input_error(e, in.batch, i);
    }
    q.chars += in.items[i].chars();
  }
  std::vector<std::reference_wrapper<const Encoding>> encodings;
  for (const auto& p : prepared) encodings.push_back(p.encoding);
  run_encodings(s, call, q, Job::Kind::kMaskLogits, encodings, t0);
  // As `roberta fill-mask --json`: one mask gives a flat list, several a list per mask.
  ordered_json answers = ordered_json::array();
  for (size_t i = 0; i < prepared.size(); ++i) {
    std::vector<std::vector<FillMaskCandidate>> results;
    try {
      results = fill.finish(prepared[i], q.job->mask_logits[i], o);
    } catch (const Error& e) {
      throw input_error(e, in.batch, i);
    }
    ordered_json lists = ordered_json::array();
    for (const auto& list : results) {
      ordered_json items = ordered_json::array();
      for (const auto& c : list)
        items.push_back({{"score", c.score}, {"token", c.token}, {"token_str", c.token_str}, {"sequence", c.sequence}});
      lists.push_back(items);
    }
    answers.push_back(results.size() == 1 ? lists[0] : lists);
  }
  Reply r = json_reply(in.batch ? answers : answers[0]);
  timing_headers(s, call, q, r);
  s.metrics->count("te_request_success", "method", method_label(in.batch));
  return r;
}

// ---------------------------------------------------------------- /predict, /rerank

namespace {

// Hugging Face's text-classification task parameters, which its clients send to POST /:
// {"top_k": n, "function_to_apply": "softmax" | "sigmoid" | "none"}.
void task_parameters(const json& body, TextClassifyOptions& o) {
  const json* p = field_of(body, "parameters");
  if (!p) return;
  if (!p->is_object()) throw ApiError(400, ErrorType::kValidation, "`parameters` must be an object");
  try {
    if (auto k = get_size(*p, "top_k")) {
      if (*k == 0) throw ApiError(422, ErrorType::kValidation, "`top_k` should be positive");
      o.top_k = *k;
    }
    if (auto f = get_string(*p, "function_to_apply")) o.function_to_apply = parse_classification_function(*f);
  } catch (const ApiError& e) {
    throw ApiError(e.status, e.type, std::string("in `parameters`: ") + e.what(), e.metric);
  } catch (const Error& e) {
    throw ApiError(422, ErrorType::kValidation, std::string("in `parameters`: ") + e.what());
  }
}

// TEI's /predict, and with `task_shape` Hugging Face's text-classification task (POST / on a
// classifier): the same labels and scores, but one list per input also for a single input (HF's
// clients read the answer's first element as the list) and the task's `parameters`.
Reply classify(State& s, const Call& call, bool task_shape) {
  const json body = parse_body(call.body);
  if (!s.classifier)
    throw ApiError(424, ErrorType::kBackend, "the model has no sequence classification head", "model_type");
  const TextClassifier& c = *s.classifier;
  const auto [inputs, batch] = parse_predict_inputs(body, s.options.max_client_batch_size);
  for (size_t i = 0; i < inputs.size(); ++i) refuse_empty(inputs[i], batch, i);
  s.metrics->count("te_predict_count", {}, {}, inputs.size());  // as TEI: every input, before its tokenization
  TextClassifyOptions o;
  o.top_k = std::nullopt;  // every label, best first, as TEI answers
  if (get_bool(body, "raw_scores", false)) o.function_to_apply = ClassificationFunction::kNone;
  if (task_shape) task_parameters(body, o);
  o.truncation = get_bool(body, "truncate", s.options.auto_truncate);
  o.truncation_side = get_truncation_side(body);
  s.metrics->count("te_request_count", "method", method_label(batch));
  const auto t0 = Clock::now();
  Queued q;
  std::vector<std::vector<LabelScore>> results;
  TextClassifier::Prepared prepared;  // input by input, so that an error names its input
  for (size_t i = 0; i < inputs.size(); ++i) {
    try {
      prepared.encodings.push_back(std::move(c.prepare(inputs[i], o).encodings.front()));
    } catch (const Error& e) {
      throw input_error(e, batch, i);
    }
    // Untruncated, an input may be as long as /info's max_input_length says (as TEI checks it).
    if (const size_t n = prepared.encodings.back().size(); !o.truncation && n > s.embedder->max_seq_length())
      throw input_error(Error("the text has " + std::to_string(n) + " tokens; the model allows at most " +
                              std::to_string(s.embedder->max_seq_length()) + " (set truncation to cut it)"),
                        batch, i);
  }
  try {
    for (const TextInput& in : inputs) q.chars += code_points(in.text) + (in.text_pair ? code_points(*in.text_pair) : 0);
    run_encodings(s, call, q, Job::Kind::kSequenceLogits, prepared.encodings, t0);
    results = c.finish(prepared, q.job->logits, o);
  } catch (const Error& e) {
    throw api_error(e);
  }
  ordered_json answers = ordered_json::array();
  for (const auto& list : results) {
    ordered_json items = ordered_json::array();
    for (const auto& l : list) items.push_back({{"score", l.score}, {"label", l.label}});
    answers.push_back(items);
  }
  Reply r = json_reply(batch || task_shape ? answers : answers[0]);
  timing_headers(s, call, q, r);
  s.metrics->count("te_request_success", "method", method_label(batch));
  return r;
}

}  // namespace

Reply predict(State& s, const Call& call) { return classify(s, call, false); }
Reply classify_task(State& s, const Call& call) { return classify(s, call, true); }

// TEI's /rerank: {"query", "texts", "return_text", "raw_scores", "truncate"} -> [{"index", "text"?, "score"}],
// best first. Scores use the model's activation (sentence-transformers' CrossEncoder: sigmoid for
// one label); raw_scores gives the logits.
Reply rerank(State& s, const Call& call) {
  const json body = parse_body(call.body);
  const auto query = get_string(body, "query");
  if (!query) throw ApiError(400, ErrorType::kValidation, "missing field `query` (a string)");
  const auto texts = body.find("texts");
  if (texts == body.end() || !texts->is_array() ||
      !std::all_of(texts->begin(), texts->end(), [](const json& t) { return t.is_string(); }))
    throw ApiError(400, ErrorType::kValidation, "`texts` must be a list of strings");
  if (texts->empty()) throw ApiError(400, ErrorType::kEmpty, "`texts` cannot be empty");
  // (as TEI, after the check of `texts`: a model that is not a reranker is a 424)
  if (!s.cross_encoder)
    throw ApiError(424, ErrorType::kBackend, "the model has no sequence classification head", "model_type");
  const CrossEncoder& ce = *s.cross_encoder;
  if (const size_t n = ce.model_config().num_labels(); n != 1)
    throw ApiError(424, ErrorType::kBackend,
                   "the model is not a reranker: its classification head has " + std::to_string(n) +
                       " labels, not one (use /predict)",
                   "model_type");
  if (texts->size() > s.options.max_client_batch_size)
    throw ApiError(413, ErrorType::kValidation,
                   "batch size " + std::to_string(texts->size()) + " > maximum allowed batch size " +
                       std::to_string(s.options.max_client_batch_size),
                   "batch_size");
  const std::vector<std::string> documents = texts->get<std::vector<std::string>>();
  for (size_t i = 0; i < documents.size(); ++i) refuse_empty({*query, documents[i]}, true, i, "texts");
  RankOptions o;
  o.return_documents = get_bool(body, "return_text", false);
  if (get_bool(body, "raw_scores", false)) o.scoring.activation = CrossEncoderActivation::kIdentity;
  o.scoring.truncation_side = get_truncation_side(body);
  // Ours: long documents read in windows, their scores joined (RankOptions::long_documents).
  if (const auto mode = get_string(body, "long_documents")) {
    try {
      o.long_documents = parse_long_documents(*mode);
    } catch (const Error& e) {
      throw ApiError(422, ErrorType::kValidation, std::string("`long_documents`: ") + e.what());
    }
  }
  if (const auto stride = get_size(body, "stride")) o.stride = *stride;
  const auto t0 = Clock::now();
  if (o.long_documents == LongDocuments::kTruncate && !get_bool(body, "truncate", s.options.auto_truncate)) {
    const size_t max_len = ce.max_length();  // where prepare would cut them
    for (size_t i = 0; i < documents.size(); ++i) {
      const size_t n = s.embedder->tokenizer().encode_pair(*query, documents[i]).size();
      if (n > max_len)
        throw ApiError(422, ErrorType::kValidation, "texts[" + std::to_string(i) + "]: the pair has " +
                                                        std::to_string(n) + " tokens, more than the " +
                                                        std::to_string(max_len) + " allowed");
    }
  }
  s.metrics->count("te_request_count", "method", "batch");
  s.metrics->count("te_predict_count", {}, {}, documents.size());  // as TEI: every pair
  Queued q;
  std::vector<RankedDocument> ranked;
  try {
    const CrossEncoder::Prepared prepared = ce.prepare_rank(*query, documents, o);
    q.chars = documents.size() * code_points(*query);
    for (const std::string& d : documents) q.chars += code_points(d);
    run_encodings(s, call, q, Job::Kind::kSequenceLogits, prepared.encodings, t0);
    ranked = ce.finish_rank(prepared, q.job->logits, documents, o);
  } catch (const Error& e) {
    throw api_error(e);
  }
  ordered_json out = ordered_json::array();
  for (const auto& d : ranked) {
    ordered_json item = {{"index", d.corpus_id}};  // TEI's field order: index, text, score
    if (d.text) item["text"] = *d.text;
    item["score"] = d.score;
    out.push_back(item);
  }
  Reply r = json_reply(out);
  timing_headers(s, call, q, r);
  s.metrics->count("te_request_success", "method", "batch");
  return r;
}

}  // namespace roberta::server
