// The HTTP side of the server on cpp-httplib: threads, timeouts, limits, authentication, the
// answers for unknown routes and methods, error bodies, the log line of each request, draining.
#include "server/server.h"

#include <algorithm>
#include <httplib.h>
#include <sys/socket.h>

#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <set>

#include "roberta/dev/npy.h"
#include "server/memory.h"
#include "server/routes.h"

namespace roberta::server {

void log_line(const std::string& line) {
  static std::mutex mutex;
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::lock_guard lock(mutex);
  std::fprintf(stderr, "%s %s\n", stamp, line.c_str());
  std::fflush(stderr);
}

namespace {

// The client of the connection this thread serves ("ADDR:PORT"), from its first request that got
// as far as routing; empty between connections. httplib serves a connection on one thread for its
// whole life, and answers a request it cannot parse before it names the client in it: this names
// the connection to close then.
thread_local std::string t_peer;
// Whether the current request's body was read to its end (read_body). A request that declares a
// body which was not (refused before it was read, a method httplib reads no body of, an error of
// httplib's own before routing) loses its connection once the answer is written (the logger runs
// then, and resets these), so that the rest of the body is never taken for a request of its own.
thread_local bool t_body_read = false;
thread_local bool t_close_connection = false;

// httplib's task queue, growing on demand: one thread per open connection (httplib serves a
// connection on one thread for its whole keep-alive life), up to `max_threads`; connections
// beyond wait for a thread. shutdown() runs what is queued, then joins every thread.
class ConnectionThreads : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(size_t max_threads) : max_threads_(max_threads) {}
  ~ConnectionThreads() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(fn));
    if (jobs_.size() > idle_ && threads_.size() < max_threads_)
      threads_.emplace_back([this] { work(); });
    else
      wake_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      ++idle_;
      wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // stopping, and nothing left to run
      auto fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      t_peer.clear();
      fn();  // (one connection, for its whole life)
      t_peer.clear();
      t_body_read = t_close_connection = false;
      lock.lock();
    }
  }

  const size_t max_threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stop_ = false;
};

bool is_openai_path(const std::string& path) { return path.starts_with("/v1/") || path == "/embeddings"; }

void set_error(httplib::Response& res, Style style, const ApiError& e) {
  res.status = e.status;
  res.set_content(style == Style::kOpenAi ? openai_error_body(e) : tei_error_body(e), "application/json");
  if (e.status == 429) res.set_header("Retry-After", "1");
  if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer");
}

// Compares without an early exit, so the time taken does not tell how much of the key matched.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() != b.size();
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

// When the current request began (set before routing; the log line's milliseconds).
thread_local std::optional<Clock::time_point> t_request_start;
bool declares_body(const httplib::Request& req) {
  const std::string length = req.get_header_value("Content-Length");
  return (!length.empty() && length != "0") || req.has_header("Transfer-Encoding");
}

// Marks the connection to be closed after this answer, and says so in the answer; false (and
// nothing said) when the connection is not known yet: a request httplib could not parse, first on
// its connection.
bool close_after(const httplib::Request& req, httplib::Response& res) {
  if (req.remote_port <= 0 && t_peer.empty()) return false;
  if (!res.has_header("Connection")) res.set_header("Connection", "close");
  t_close_connection = true;
  return true;
}

// The request body through httplib's content reader: chunked or not, decoded (gzip, deflate, br),
// at most `limit` bytes after decoding (httplib's own limit counts only a Content-Length, before
// decoding). False, with the error answer in `res`, when it is over the limit, in an encoding
// httplib cannot decode, or broken; the connection is then closed after the answer.
bool read_body(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader,
               size_t limit, std::string& body) {
  const std::string coding = req.get_header_value("Content-Encoding");
  // (httplib would pass a body in another encoding on as it is, and one of multipart/form-data to
  // callbacks a content reader does not have)
  const bool known = coding.empty() || coding == "identity" || coding == "gzip" || coding == "deflate" || coding == "br";
  const bool multipart = req.get_header_value("Content-Type").starts_with("multipart/");
  bool over = false;
  const bool ok = known && !multipart && reader([&](const char* data, size_t n) {
    if (body.size() + n > limit) return !(over = true);
    body.append(data, n);
    return true;
  });
  if (ok && !over) {
    // httplib reads no body of a DELETE without a Content-Length (no route takes DELETE: the
    // answer is 405 or 404 all the same, then the connection is closed)
    t_body_read = !(req.method == "DELETE" && !req.has_header("Content-Length"));
    if (!t_body_read && declares_body(req)) close_after(req, res);
    return true;
  }
  // (httplib's own 413, for a Content-Length over the limit, has read the body past: nothing is left)
  t_body_read = !over && known && !multipart && res.status == 413;
  body.clear();
  const Style style = is_openai_path(req.path) ? Style::kOpenAi : Style::kTei;
  if (!t_body_read) close_after(req, res);
  if (!known || multipart) res.status = 415;
  if (over || res.status == 413)
    set_error(res, style, ApiError(413, ErrorType::kValidation,
                                   "the request body is larger than the payload limit (" + std::to_string(limit) +
                                       " bytes" + (coding.empty() ? "" : ", once decoded") + ")"));
  else if (res.status == 415)
    set_error(res, style, ApiError(415, ErrorType::kValidation,
                                   multipart ? "a multipart/form-data body is not accepted: send JSON"
                                             : "Content-Encoding \"" + coding + "\" is not supported (gzip, deflate and br are)"));
  else
    set_error(res, style, ApiError(400, ErrorType::kValidation,
                                   "the request body could not be read (broken chunked or compressed data)"));
  return false;
}

}  // namespace

struct Server::Impl {
  explicit Impl(ServerOptions o) : state(std::move(o)) {}
  State state;
  httplib::Server http;
  int port = -1;
  std::mutex mutex;
  std::condition_variable changed;
  bool serving = false, stop_requested = false;

  void handle(const Route& route, const httplib::Request& req, const std::string& body, httplib::Response& res);
  // httplib's timeouts and threads, then the three below.
  void configure();
  void add_routes();           // the route table, 405 with Allow for other methods, 404 elsewhere
  void add_pre_routing();      // CORS, and the checks of where a request's body ends
  void add_error_handlers();   // JSON bodies for httplib's own answers and exceptions; the log line
};

void Server::Impl::handle(const Route& route, const httplib::Request& req, const std::string& body,
                          httplib::Response& res) {
  State& s = state;
  const Call call{body, Connections::peer_name(req.remote_addr, req.remote_port),
                  t_request_start.value_or(Clock::now())};
  s.connections->handler_begin(call.peer);
  bool permit = false;
  try {
    if (!route.is_public && !s.options.api_key.empty() &&
        !same_secret(req.get_header_value("Authorization"), "Bearer " + s.options.api_key))
      throw ApiError(401, ErrorType::kUnauthorized, "missing or wrong bearer token (Authorization: Bearer KEY)",
                     "unauthorized");
    if (!s.ready) throw ApiError(503, ErrorType::kUnhealthy, "the model is loading", "unhealthy");
    if (s.draining) {
      res.set_header("Connection", "close");
      throw ApiError(503, ErrorType::kUnhealthy, "the server is shutting down", "unhealthy");
    }
    if (route.permit) {
      if (s.in_flight.fetch_add(1) >= s.options.max_concurrent_requests) {
        s.in_flight.fetch_sub(1);
        throw ApiError(429, ErrorType::kOverloaded, "Model is overloaded", "overloaded");
      }
      permit = true;
    }
    Reply r = route.handle(s, call);
    res.status = r.status;
    for (const auto& [k, v] : r.headers) res.set_header(k, v);
    res.set_content(std::move(r.body), r.content_type.c_str());
  } catch (const ApiError& e) {
    set_error(res, route.style, e);
    if (s.ready && e.status != 503) s.metrics->count("te_request_failure", "err", e.metric);
  } catch (const Error& e) {
    const ApiError a = api_error(e);
    set_error(res, route.style, a);
    if (s.ready) s.metrics->count("te_request_failure", "err", a.metric);
  } catch (const std::exception& e) {
    set_error(res, route.style, ApiError(500, ErrorType::kBackend, e.what(), "inference"));
    if (s.ready) s.metrics->count("te_request_failure", "err", "inference");
  }
  if (permit) s.in_flight.fetch_sub(1);
  s.connections->handler_end(call.peer);
}

void Server::Impl::configure() {
  const ServerOptions& o = state.options;
  const auto io = std::chrono::duration<double>(o.io_timeout);
  http.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(io));
  http.set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(io));
  http.set_keep_alive_timeout(5);
  http.set_tcp_nodelay(true);  // headers and body go out as separate writes: no Nagle delay between them
  http.set_keep_alive_max_count(100000);  // httplib's default of 5 requests per connection is low
  http.set_payload_max_length(o.payload_limit);
  // One thread per connection up to the request limit, and some more to answer 429 beyond it.
  const size_t threads = o.max_concurrent_requests + 16;
  http.new_task_queue = [threads] { return new ConnectionThreads(threads); };

  add_routes();
  add_pre_routing();
  add_error_handlers();
}

void Server::Impl::add_routes() {
  const ServerOptions& o = state.options;
  // Every route; the other methods of a known path answer 405 with Allow, other paths 404. Every
  // handler of a method with a body reads it itself (read_body): httplib's own reading would hold
  // --payload-limit only against a Content-Length, not against a chunked body or a decoded one.
  using Reader = httplib::ContentReader;
  const size_t limit = o.payload_limit;
  std::map<std::string, std::set<std::string>> methods;
  for (const Route& r : routes()) {
    methods[r.path].insert(r.method);
    if (std::string(r.method) == "GET")
      http.Get(r.path, [this, &r](const httplib::Request& req, httplib::Response& res) { handle(r, req, "", res); });
    else
      http.Post(r.path, [this, &r, limit](const httplib::Request& req, httplib::Response& res, const Reader& read) {
        std::string body;
        if (read_body(req, res, read, limit, body)) handle(r, req, body, res);
      });
  }
  for (const auto& [path, allowed] : methods) {
    std::string allow;
    for (const auto& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
    const Style style = is_openai_path(path) ? Style::kOpenAi : Style::kTei;
    const auto refuse = [style, allow](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Allow", allow);
      set_error(res, style, ApiError(405, ErrorType::kValidation, "method " + req.method + " is not allowed here", "method"));
    };
    const auto refuse_body = [refuse, limit](const httplib::Request& req, httplib::Response& res, const Reader& read) {
      std::string body;
      if (read_body(req, res, read, limit, body)) refuse(req, res);
    };
    const std::string p = path;
    if (!allowed.count("GET")) http.Get(p, refuse);
    if (!allowed.count("POST")) http.Post(p, refuse_body);
    http.Put(p, refuse_body);
    http.Delete(p, refuse_body);
    http.Patch(p, refuse_body);
  }
  const auto no_route = [limit](const httplib::Request& req, httplib::Response& res, const Reader& read) {
    std::string body;
    if (read_body(req, res, read, limit, body))
      set_error(res, is_openai_path(req.path) ? Style::kOpenAi : Style::kTei,
                ApiError(404, ErrorType::kValidation, "no route " + req.path));
  };
  http.Post(".*", no_route);  // (after every route: httplib tries the patterns in order)
  http.Put(".*", no_route);
  http.Delete(".*", no_route);
  http.Patch(".*", no_route);
}

void Server::Impl::add_pre_routing() {
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    t_request_start = Clock::now();
    t_peer = Connections::peer_name(req.remote_addr, req.remote_port);
    // CORS as TEI's layer (tower-http's CorsLayer) answers it: every answer names the allowed
    // origin; an OPTIONS request, on any path, is a preflight answered 200 with the methods and
    // headers a page may use (TEI allows Content-Type only; here also Authorization, for
    // --api-key, and whatever the preflight asks for).
    const auto& origins = state.options.cors_allow_origin;
    const std::string origin = req.get_header_value("Origin");
    if (origins.empty())
      res.set_header("Access-Control-Allow-Origin", "*");
    else if (std::find(origins.begin(), origins.end(), origin) != origins.end())
      res.set_header("Access-Control-Allow-Origin", origin);
    res.set_header("Vary", "origin, access-control-request-method, access-control-request-headers");
    if (req.method == "OPTIONS") {
      res.status = 200;
      res.set_header("Access-Control-Allow-Methods", "GET,POST");
      // (the headers the page asks for, as tower-http's mirror_request: a client library's own
      // headers, e.g. the OpenAI SDK's x-stainless-*, pass too)
      const std::string asked = req.get_header_value("Access-Control-Request-Headers");
      res.set_header("Access-Control-Allow-Headers", asked.empty() ? "content-type,authorization" : asked);
      if (declares_body(req)) close_after(req, res);  // (its body is never read)
      return httplib::Server::HandlerResponse::Handled;
    }
    // Where the body ends must be certain (RFC 9112 6.1, 6.3): Content-Length a number, given
    // once, and not with a Transfer-Encoding; else 400 and the connection closed.
    const auto lengths = req.headers.equal_range("Content-Length");
    std::set<std::string> values;
    for (auto it = lengths.first; it != lengths.second; ++it) values.insert(it->second);
    const bool number = values.empty() || (values.size() == 1 && !values.begin()->empty() &&
                                           values.begin()->find_first_not_of("0123456789") == std::string::npos);
    if (!number || (!values.empty() && req.has_header("Transfer-Encoding"))) {
      set_error(res, is_openai_path(req.path) ? Style::kOpenAi : Style::kTei,
                ApiError(400, ErrorType::kValidation,
                         number ? "Content-Length and Transfer-Encoding together: where the body ends is unclear"
                                : "Content-Length must be one number"));
      close_after(req, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    // httplib reads bodies of POST, PUT, PATCH and DELETE only: a body of another method is never
    // read, and costs its connection after the answer.
    const bool read = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE";
    if (!read && declares_body(req)) close_after(req, res);
    return httplib::Server::HandlerResponse::Unhandled;
  });
}

void Server::Impl::add_error_handlers() {
  // Answers httplib makes itself (404, 413, 400 for a broken request) get a JSON body too.
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    // (every answer of 400 and up passes here before it is written, httplib's own before routing too)
    // (a request httplib answers before it names the client in it, remote_port -1 — a 400 for a
    // request it could not parse, a 414 for a path too long — has headers it did not read: whether
    // a body follows is unknown)
    if ((declares_body(req) && !t_body_read) || res.status == 414 || (res.status == 400 && req.remote_port <= 0))
      close_after(req, res);
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const Style style = is_openai_path(req.path) ? Style::kOpenAi : Style::kTei;
    const int status = res.status;
    const std::string message = status == 404   ? "no route " + req.path
                                : status == 413 ? "the request body is larger than the payload limit"
                                : status == 400 ? "malformed HTTP request"
                                                : "HTTP error " + std::to_string(status);
    set_error(res, style, ApiError(status, ErrorType::kValidation, message));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
    set_error(res, is_openai_path(req.path) ? Style::kOpenAi : Style::kTei,
              ApiError(500, ErrorType::kBackend, "internal error", "inference"));
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    // (httplib calls it once the answer is written, for every answer)
    if (t_close_connection)
      state.connections->close(req.remote_port > 0 ? Connections::peer_name(req.remote_addr, req.remote_port) : t_peer);
    t_close_connection = t_body_read = false;
    if (state.options.quiet) return;
    char ms[32] = "-";
    if (t_request_start)
      std::snprintf(ms, sizeof ms, "%.1f",
                    std::chrono::duration<double, std::milli>(Clock::now() - *t_request_start).count());
    t_request_start.reset();
    const std::string tokens = res.get_header_value("x-compute-tokens");
    log_line(req.method + " " + req.path + " " + std::to_string(res.status) + " " + (tokens.empty() ? "-" : tokens) +
             " tokens " + ms + " ms");
  });
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  ServerOptions& o = impl_->state.options;
  if (o.model_id.empty()) o.model_id = o.model_dir;
  if (o.served_model_name.empty()) o.served_model_name = o.model_id;
  impl_->configure();
}

Server::~Server() {
  stop();
  // serve() may not have run: the helpers stop here in any case.
  if (impl_->state.batcher) impl_->state.batcher->stop();
  if (impl_->state.connections) impl_->state.connections->stop();
}

int Server::bind() {
  const ServerOptions& o = impl_->state.options;
  const int port = o.port == 0 ? impl_->http.bind_to_any_port(o.host) : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port <= 0)
    throw Error("cannot listen on " + o.host + ":" + std::to_string(o.port) + " (in use, or not an address of this machine)",
                ErrorKind::kIo);
  impl_->port = port;
  // Debian's httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into the
  // library): 64 clients connecting at once overflow it and some get reset. listen() again on the
  // same socket raises the backlog.
  if (const int fd = find_listening_socket(port); fd >= 0) ::listen(fd, SOMAXCONN);
  impl_->state.connections = std::make_unique<Connections>(port, o.request_timeout, [](const std::string& m) {
    log_line(m);
  });
  return port;
}

void Server::load() {
  State& s = impl_->state;
  s.embedder = std::make_unique<Embedder>(Embedder::load(s.options.model_dir, s.options.load));
  const Model& model = s.embedder->model();
  if (model.has_lm_head() && s.embedder->tokenizer().mask_id()) s.fill_mask = std::make_unique<FillMask>(model, s.embedder->tokenizer());
  if (model.has_lm_head())
    s.sparse_encoder = std::make_unique<SparseEncoder>(model, s.embedder->tokenizer(), s.embedder->config());
  const std::filesystem::path dir = s.options.model_dir;
  std::error_code ec;
  if (std::filesystem::exists(dir / "colbert_linear.safetensors", ec) || std::filesystem::exists(dir / "colbert_linear.pt", ec)) {
    try {
      s.m3 = std::make_unique<M3Embedder>(M3Embedder::with_heads(*s.embedder, dir));
    } catch (const Error& e) {  // the dense routes still serve; the bge-m3 ones say why not
      s.m3_error = e.what();
      warn(s.m3_error);
    }
  }
  if (!s.options.calibration_embeddings.empty()) {
    const NpyArray a = read_npy(s.options.calibration_embeddings);
    if (a.shape.size() != 2 || a.shape[0] < 1)
      throw Error(s.options.calibration_embeddings + ": expected a (embeddings, dimensions) array", ErrorKind::kInvalidInput);
    Matrix m(static_cast<size_t>(a.shape[0]), static_cast<size_t>(a.shape[1]));
    m.data = a.as_float();
    s.calibration = QuantizeRanges::of(m);
  }
  if (model.has_head(Head::kSequenceClassification)) {
    s.classifier = std::make_unique<TextClassifier>(model, s.embedder->tokenizer());
    s.cross_encoder = std::make_unique<CrossEncoder>(model, s.embedder->tokenizer(),
                                                     CrossEncoderConfig::from_dir(s.options.model_dir));
  }
  if (s.options.default_prompt_name) {
    const auto& prompts = s.embedder->config().prompts;
    const auto it = prompts.find(*s.options.default_prompt_name);
    if (it == prompts.end()) {
      std::string known;
      for (const auto& [name, _] : prompts) known += (known.empty() ? "" : ", ") + name;
      throw Error("--default-prompt-name " + *s.options.default_prompt_name + " is not one of the model's prompts (" +
                      (known.empty() ? "it has none" : known) + ")",
                  ErrorKind::kInvalidInput);
    }
    s.default_prompt = it->second;
  } else if (s.options.default_prompt) {
    s.default_prompt = *s.options.default_prompt;
  }
  const size_t max_input = s.embedder->max_seq_length();
  if (s.options.max_batch_tokens < max_input)
    throw Error("--max-batch-tokens " + std::to_string(s.options.max_batch_tokens) +
                    " is smaller than the model's maximum input length " + std::to_string(max_input),
                ErrorKind::kInvalidInput);
  s.model_dtype = s.options.load.weights == WeightType::kBF16   ? "bfloat16"
                  : s.options.load.weights == WeightType::kInt8 ? "int8"
                                                                : "float32";
  s.metrics = std::make_unique<Metrics>(max_input);
  BatcherOptions batching;
  batching.max_batch_tokens = s.options.max_batch_tokens;
  batching.max_batch_requests = s.options.max_batch_requests;
  batching.on_idle = release_free_memory;
  s.batcher = std::make_unique<Batcher>(
      Pipelines{.embedder = s.embedder.get(), .classifier = s.classifier.get(), .fill_mask = s.fill_mask.get(),
                .sparse = s.sparse_encoder.get(), .m3 = s.m3.get()},
      batching, *s.metrics);
  s.ready = true;
}

void Server::serve() {
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stop_requested) return;
    impl_->serving = true;
  }
  impl_->changed.notify_all();
  impl_->http.listen_after_bind();  // returns once stopped and every connection thread is done
  // `ready` (set after the batcher by load(), on another thread) orders the read of the pointer.
  if (impl_->state.ready) impl_->state.batcher->stop();
  impl_->state.connections->stop();
  std::lock_guard lock(impl_->mutex);
  impl_->serving = false;
  impl_->changed.notify_all();
}

void Server::stop() {
  std::unique_lock lock(impl_->mutex);
  impl_->stop_requested = true;
  impl_->state.draining = true;
  if (!impl_->serving) return;
  // listen_after_bind() may not have set is_running yet: wait for it, then stop it.
  while (impl_->serving && !impl_->http.is_running()) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    lock.lock();
  }
  if (impl_->serving) impl_->http.stop();
}

int Server::port() const { return impl_->port; }

const Metrics& Server::metrics() const { return *impl_->state.metrics; }

}  // namespace roberta::server
