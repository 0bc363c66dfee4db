#pragma once
// The route handlers (internal to the server): routes.cpp holds the embedding, tokenizer and
// service routes and the table of every route; sparse_routes.cpp /embed_sparse; task_routes.cpp
// /predict (and POST / on a classifier), /rerank and /fill_mask.
// Every handler that runs the model prepares on its own thread, queues a Job on the batcher, and
// finishes its rows with the pipeline's finish step.
#include <memory>

#include "server/routes.h"

namespace roberta::server {

// A job queued by a handler, with what TEI reports of it.
struct Queued {
  std::shared_ptr<Job> job = std::make_shared<Job>();
  size_t tokens = 0, chars = 0;
  double tokenization = 0;  // seconds of the prepare step
};

// Submits q.job and waits for it: ApiError 499 when the client goes away first, the job's error
// (as api_error) when its pass failed.
void run_queued(State& s, const Call& call, Queued& q);
// TEI's timing headers (x-compute-time, x-queue-time, x-inference-time, ... in milliseconds;
// per-input times averaged as TEI does) and the request-duration metrics.
void timing_headers(State& s, const Call& call, const Queued& q, Reply& r);

double seconds(Clock::duration d);
std::string ms(double seconds);  // whole milliseconds, as TEI's headers give them

// TEI's /predict input: "text" | ["text", "pair"] (one pair) | a list of those; whether a list was
// sent. ApiError 400 for other shapes, 413 for more than max_batch.
std::pair<std::vector<TextInput>, bool> parse_predict_inputs(const json& body, size_t max_batch);

// An embedding request's inputs and options (/embed, /embed_all, /embed_sparse, /v1/embeddings).
struct EmbedRequest {
  Inputs inputs;
  EmbedOptions options;
  bool normalize = true;
  std::optional<size_t> dimensions;
  std::string field = "inputs";    // the request's name of the inputs, for errors
  std::vector<std::string> names{};  // or each input's own name ("inputs.sentences[0]")
};
// TEI's truncate, truncation_direction and prompt_name of an embedding request (ApiError 422 for
// an unknown prompt name).
EmbedOptions embed_options(State& s, const json& body);
// Prepares every input on this thread (ApiError 422 naming the input that fails), queues them as
// one Job of `kind` and waits for its rows.
Queued run_job(State& s, const Call& call, const EmbedRequest& req, Job::Kind kind);
const char* method_label(const Inputs& in);  // TEI's metric label: "batch" or "single"

// An embedding request's "precision" (ours, sentence-transformers' name) and int8 / uint8
// "ranges" ([[low, ...], [high, ...]]); ApiError 422 for other values. quantized_rows.cpp.
struct QuantizeRequest {
  Precision precision = Precision::kFloat32;
  std::optional<QuantizeRanges> ranges;
};
QuantizeRequest quantize_request(const json& body);
// ApiError 422 when the int8 / uint8 ranges q takes do not have `dimensions` values (asked before
// the forward pass).
void check_quantize(const State& s, const QuantizeRequest& q, size_t dimensions);
// Each finished row as JSON: float32 as numbers (or a base64 string of its little-endian bytes);
// quantized as integers (or a base64 string of its bytes), int8 / uint8 with the request's ranges,
// else --calibration-embeddings', else those of the rows themselves.
std::vector<std::string> row_texts(State& s, const QuantizeRequest& q, std::span<const std::span<float>> rows,
                                   bool base64);

// Jina AI's `late_chunking: true` on /embed and /v1/embeddings: the inputs, joined by spaces, are
// one document whose chunks they are; q.job->pooled holds one row per input, not normalised.
// late_chunk_routes.cpp, as is /embed_late_chunks.
Queued run_late_chunked_inputs(State& s, const Call& call, const EmbedRequest& req, const json& body);
Reply embed_late_chunks(State& s, const Call& call);
Reply embed_sparse(State& s, const Call& call);       // sparse_routes.cpp
Reply embed_multivector(State& s, const Call& call);  // sparse_routes.cpp
Reply predict(State& s, const Call& call);
// POST / on a classifier: /predict in the shape of Hugging Face's text-classification task.
Reply classify_task(State& s, const Call& call);
Reply rerank(State& s, const Call& call);
Reply fill_mask(State& s, const Call& call);

}  // namespace roberta::server
