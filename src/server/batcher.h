#pragma once
// The server's batcher: handler threads tokenize (Embedder::prepare) and queue a Job; one batcher
// thread packs queued sequences into forward passes by a budget of real tokens (no padding) and
// hands every Job its rows.
//
// Sequences, not requests, are the unit of scheduling, and a request larger than one pass is split
// over several passes instead of being refused. Each pass is filled in two rounds over the queue
// in arrival order: first one sequence from every waiting request (as long as the budget allows),
// then as many more as fit. So a one-sentence request that arrives behind a 10,000-token request
// goes out in the very next pass, beside the big request's sequences, instead of waiting for all
// of them; and the oldest request always gets at least one sequence into each pass, so none starves.
//
//   Batcher batcher(embedder, {.max_batch_tokens = 16384}, metrics);
//   auto job = std::make_shared<Job>();
//   job->texts = {embedder.prepare("a text")};
//   batcher.submit(job);
//   if (batcher.wait(*job, [] { return true; }) && !job->error) use(job->pooled.row(0));
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "roberta/embedder.h"
#include "server/metrics.h"

namespace roberta::server {

using Clock = std::chrono::steady_clock;

struct Job {
  enum class Kind { kPooled, kTokens };  // one embedding per text (/embed), or every token's (/embed_all)
  Kind kind = Kind::kPooled;
  std::vector<PreparedText> texts;  // set before submit(); the batcher moves the ids out

  // Written by the batcher, read after wait() returned true.
  Matrix pooled;               // (texts, dimension) without normalisation: kPooled
  std::vector<Matrix> tokens;  // (tokens, hidden) per text: kTokens
  std::optional<Error> error;  // a failed forward pass
  double queue_seconds = 0;      // from submit() to its first pass
  double inference_seconds = 0;  // summed over its rows: the duration of the pass each row was in
  uint64_t last_pass = 0;        // number of the batcher's pass that finished it (1, 2, ...)

 private:
  friend class Batcher;
  size_t scheduled_ = 0, finished_ = 0;
  bool cancelled_ = false;
  Clock::time_point enqueued_;
  std::condition_variable done_cv_;
  bool done() const { return error.has_value() || finished_ == texts.size(); }
};

struct BatcherOptions {
  size_t max_batch_tokens = 16384;  // real tokens per forward pass (a longer sequence goes alone)
  size_t max_batch_requests = 0;    // sequences per forward pass; 0: no limit
  std::chrono::milliseconds client_check{100};  // how often wait() asks whether the client is there
};

class Batcher {
 public:
  Batcher(const Embedder& embedder, BatcherOptions options, Metrics& metrics);
  ~Batcher();  // stop()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  void submit(const std::shared_ptr<Job>& job);
  // Waits until the job is done (true). Every client_check it asks client_alive(); when that says false,
  // the job's sequences still queued are dropped and wait() returns false at once.
  bool wait(Job& job, const std::function<bool()>& client_alive);
  // Sequences queued and not yet in a pass.
  size_t queued_sequences() const;
  // Finishes the pass under way and stops the thread; jobs still queued fail.
  void stop();

 private:
  struct Slot {
    std::shared_ptr<Job> job;
    size_t index;  // of the text in the job
  };
  void loop();
  std::vector<Slot> next_pass();  // under mutex_
  void run_pass(std::vector<Slot>& pass, uint64_t number);

  const Embedder& embedder_;
  const BatcherOptions options_;
  Metrics& metrics_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  size_t queued_sequences_ = 0;
  uint64_t passes_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace roberta::server
