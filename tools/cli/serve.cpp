// roberta serve: the HTTP server (src/server/) behind a command line, with SIGTERM/SIGINT draining.
#include <algorithm>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <thread>

#include "common.h"
#include "roberta/zero_shot_classifier.h"
#include "server/server.h"

namespace roberta::cli {
namespace {

// The signal handler only writes a byte to this pipe (async-signal-safe); the main thread waits
// on the other end, whichever thread the signal interrupted.
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_signal(int) {
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe[1], &byte, 1);
}

}  // namespace

int run_serve(const Args& args) {
  server::ServerOptions o;
  o.model_id = model_name(args);
  o.model_dir = resolve_model(o.model_id);
  o.load = load_options(args, "auto");
  o.host = args.get("host").value_or("127.0.0.1");
  if (auto n = args.integer("port", 0, 65535)) o.port = static_cast<int>(*n);
  if (auto n = args.integer("max-batch-tokens", 1, 100'000'000)) o.max_batch_tokens = static_cast<size_t>(*n);
  if (auto n = args.integer("max-batch-requests", 1, 1'000'000)) o.max_batch_requests = static_cast<size_t>(*n);
  if (auto n = args.integer("max-concurrent-requests", 1, 4096)) o.max_concurrent_requests = static_cast<size_t>(*n);
  if (auto n = args.integer("max-client-batch-size", 1, 1'000'000)) o.max_client_batch_size = static_cast<size_t>(*n);
  if (auto n = args.integer("payload-limit", 1, 1'000'000'000)) o.payload_limit = static_cast<size_t>(*n);
  if (auto t = args.number("request-timeout")) {
    if (*t <= 0) throw UsageError("--request-timeout must be positive");
    o.request_timeout = *t;
  }
  o.auto_truncate = !args.flag("no-auto-truncate");
  if (auto key = args.get("api-key"))
    o.api_key = *key;
  else if (const char* env = std::getenv("ROBERTA_API_KEY"); env && *env)
    o.api_key = env;
  if (auto name = args.get("served-model-name")) o.served_model_name = *name;
  o.quiet = args.flag("quiet");
  if (const char* task = std::getenv("TASK"); task) o.root_task = task;  // as TEI reads it
  if (auto origins = args.get("cors-allow-origin")) {
    // (split at commas, stripped, empty parts dropped, as a zero-shot label list is)
    o.cors_allow_origin = parse_candidate_labels(*origins);
    if (o.cors_allow_origin.empty()) throw UsageError("--cors-allow-origin needs at least one origin");
    if (std::ranges::count(o.cors_allow_origin, "*")) o.cors_allow_origin.clear();  // (as TEI: "*" allows any)
  }
  if (auto file = args.get("calibration-embeddings")) o.calibration_embeddings = *file;
  o.default_prompt_name = args.get("default-prompt-name");
  o.default_prompt = args.get("default-prompt");
  if (o.default_prompt_name && o.default_prompt)
    throw UsageError("--default-prompt-name and --default-prompt cannot both be given");

  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) throw Error("cannot create a pipe", ErrorKind::kIo);
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a client gone mid-answer is a failed write, not the end of the server

  server::Server server(o);
  const int port = server.bind();  // answers 503 while the model loads
  std::thread http([&] { server.serve(); });
  try {
    server.load();
  } catch (...) {
    server.stop();
    http.join();
    throw;
  }
  std::cerr << "listening on http://" << o.host << ":" << port << std::endl;

  // Waits in short polls rather than one blocking read: under ThreadSanitizer a signal handler runs
  // only when its thread next enters an intercepted call, which a read() that never returns is not.
  for (;;) {
    pollfd p{g_signal_pipe[0], POLLIN, 0};
    if (::poll(&p, 1, 250) > 0 && (p.revents & POLLIN)) break;
  }
  if (!o.quiet) server::log_line("shutting down: finishing the requests in flight");
  server.stop();
  http.join();
  if (!o.quiet) server::log_line("stopped");
  return 0;
}

}  // namespace roberta::cli
