#pragma once
// `roberta serve`: an HTTP server for the encoder with the routes of Hugging Face's Text Embeddings
// Inference (/embed, /embed_all, /tokenize, /decode, /info, /health, /metrics, and /predict and
// /rerank on a classification model), OpenAI's embeddings API (/v1/embeddings, /v1/models) and
// /fill_mask, batching the sequences of concurrent requests into shared forward passes (see
// batcher.h).
//
//   roberta::server::Server server({.model_dir = "models/demo", .port = 0});
//   int port = server.bind();          // answers 503 from here on until load() is done
//   std::thread t([&] { server.serve(); });
//   server.load();                     // roberta::Error if the model cannot be loaded
//   ...                                // POST http://127.0.0.1:<port>/embed
//   server.stop();  t.join();          // finishes every request in flight
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "roberta/model.h"

namespace roberta::server {

struct ServerOptions {
  std::string model_dir;
  std::string model_id;                  // the model as named (a Hub id): /info's model_id; default: model_dir
  LoadOptions load;
  std::string host = "127.0.0.1";
  int port = 8080;                       // 0: any free port
  size_t max_batch_tokens = 16384;       // real tokens per forward pass
  size_t max_batch_requests = 0;         // sequences per forward pass; 0: no limit
  size_t max_concurrent_requests = 512;  // more in flight: 429
  size_t max_client_batch_size = 32;     // more inputs in one request: 413
  size_t payload_limit = 2'000'000;      // bytes of a request body; more: 413
  bool auto_truncate = true;             // default of `truncate`; false: over-long input is 422
  std::string api_key;                   // non-empty: every route but the health routes and /metrics needs "Bearer KEY"
  std::string served_model_name;         // default: model_id
  bool quiet = false;                    // no line per request
  double request_timeout = 30;           // seconds a client has to send a whole request
  double io_timeout = 10;                // seconds one read or write may block
  std::string root_task;                 // TEI's TASK: "sentence-similarity" makes POST / /similarity
  // TEI's --default-prompt-name (one of the folder's prompts) / --default-prompt: put before every
  // text a request gives no prompt_name for. Without either, no prompt (as TEI: the folder's own
  // default_prompt_name is not applied).
  std::optional<std::string> default_prompt_name, default_prompt;
  // A .npy of float32 embeddings (M, D) whose per-dimension minimum and maximum are the int8 / uint8
  // buckets of requests with "precision" and no "ranges" (sentence-transformers' calibration_embeddings).
  std::string calibration_embeddings;
  // CORS, as TEI's --cors-allow-origin: the origins whose browser pages may call the server (their
  // Origin echoed in Access-Control-Allow-Origin); empty: any origin ("*").
  std::vector<std::string> cors_allow_origin;
};

class Metrics;

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the socket; throws roberta::Error (kIo) when it cannot. Returns the port.
  int bind();
  // Loads the model (throws roberta::Error); the model routes answer from then on. Call it once,
  // and let it return before stop().
  void load();
  // Answers requests until stop(); returns when every request in flight has its answer.
  void serve();
  // Stops accepting connections; requests already in flight finish (new ones on open
  // connections get 503). Safe to call from any thread, and more than once.
  void stop();
  int port() const;
  // The metrics (for tests); valid after load().
  const Metrics& metrics() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes one log line (with a time stamp) to stderr, whole even when threads log at once.
void log_line(const std::string& line);

}  // namespace roberta::server
