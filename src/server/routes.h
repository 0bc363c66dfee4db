#pragma once
// The server's routes, one handler each, and the state they share. Handlers know nothing of HTTP
// sockets: they take the request body and the client's name, and return a Reply or throw ApiError
// (server.cpp turns it into TEI's or OpenAI's error body). A new route is one handler and one line
// of the table in routes.cpp.
#include <atomic>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "roberta/embedder.h"
#include "roberta/cross_encoder.h"
#include "roberta/fill_mask.h"
#include "roberta/quantization.h"
#include "roberta/text_classifier.h"
#include "server/api.h"
#include "server/batcher.h"
#include "server/connections.h"
#include "server/metrics.h"
#include "server/server.h"

namespace roberta::server {

struct State {
  explicit State(ServerOptions o) : options(std::move(o)) {}
  ServerOptions options;
  // Set by load() before `ready` becomes true; read only after it is.
  std::unique_ptr<Metrics> metrics;
  std::unique_ptr<Embedder> embedder;
  std::unique_ptr<FillMask> fill_mask;  // when the model has an MLM head and <mask>
  std::unique_ptr<SparseEncoder> sparse_encoder;  // when the model has an MLM head: /embed_sparse
  // A bge-m3 folder (colbert_linear, sparse_linear beside the model): /embed_sparse gives its
  // lexical weights, /embed_multivector its ColBERT vectors. m3_error: why a folder with a .pt head
  // has none (not converted, malformed), for those routes' 424.
  std::unique_ptr<M3Embedder> m3;
  std::string m3_error;
  std::optional<QuantizeRanges> calibration;  // --calibration-embeddings' ranges
  // When the model has a sequence-classification head: /predict and /rerank.
  std::unique_ptr<TextClassifier> classifier;
  std::unique_ptr<CrossEncoder> cross_encoder;
  std::unique_ptr<Batcher> batcher;
  std::string model_dtype;                    // "float32", "bfloat16" or "int8"
  // Put before texts without a prompt_name (TEI's --default-prompt(-name)); set even when empty.
  std::optional<std::string> default_prompt;
  std::unique_ptr<Connections> connections;  // set by bind()
  std::atomic<bool> ready{false}, draining{false};
  std::atomic<size_t> in_flight{0};  // requests holding a permit (--max-concurrent-requests)
};

struct Call {
  const std::string& body;
  std::string peer;  // "ADDR:PORT" of the client
  Clock::time_point start;
};

struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

enum class Style { kTei, kOpenAi };  // the error body a route answers with

struct Route {
  const char* method;
  const char* path;
  Style style;
  bool is_public;  // no --api-key needed (TEI: /health, GET / and /ping, /metrics)
  bool permit;     // counts against --max-concurrent-requests (runs the model)
  Reply (*handle)(State&, const Call&);
};

std::span<const Route> routes();

}  // namespace roberta::server
