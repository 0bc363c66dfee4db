#pragma once
// The server's batcher: handler threads prepare (tokenize) and queue a Job; one batcher thread
// packs queued sequences into forward passes by a budget of real tokens (no padding) and hands
// every Job its rows; the handler then finishes its own rows with the pipeline's finish step.
//
// Sequences, not requests, are the unit of scheduling, and a request larger than one pass is split
// over several passes instead of being refused. Each pass is filled in two rounds over the queue
// in arrival order: first one sequence from every waiting request (as long as the budget allows),
// then as many more as fit. So a one-sentence request that arrives behind a 10,000-token request
// goes out in the very next pass, beside the big request's sequences, instead of waiting for all
// of them; and the oldest request always gets at least one sequence into each pass, so none starves.
//
// A pass runs one kind of output (pooled embeddings, token states, classifier logits, MLM logits
// at the masks). Its kind is that of the oldest request that was not in the previous pass (else of
// the oldest request): requests of different kinds take turns, and a small /predict behind a
// large /embed waits one pass, not all of them.
//
//   Batcher batcher({.embedder = &embedder, .classifier = &classifier}, {.max_batch_tokens = 16384}, metrics);
//   auto job = std::make_shared<Job>();
//   job->texts = {embedder.prepare("a text")};
//   batcher.submit(job);
//   if (batcher.wait(*job, [] { return true; }) && !job->error) use(job->pooled.row(0));
//
//   auto p = classifier.prepare(inputs);           // /predict: the handler keeps p for finish
//   auto job = std::make_shared<Job>();
//   job->kind = Job::Kind::kSequenceLogits;
//   for (const auto& e : p.encodings) job->sequences.push_back(e.ids);
//   batcher.submit(job);
//   if (batcher.wait(*job, alive) && !job->error) results = classifier.finish(p, job->logits, options);
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
#include "roberta/fill_mask.h"
#include "roberta/m3_embedder.h"
#include "roberta/sparse_encoder.h"
#include "roberta/text_classifier.h"
#include "server/metrics.h"

namespace roberta::server {

using Clock = std::chrono::steady_clock;

struct Job {
  enum class Kind {
    kPooled,          // one embedding per text (/embed, /v1/embeddings): Embedder::run
    kTokens,          // every token's last hidden state (/embed_all): Embedder::run_tokens
    kSequenceLogits,  // the classification head's logits (/predict, /rerank): TextClassifier::run
    kMaskLogits,      // the MLM logits at each <mask> (/fill_mask): FillMask::run
    kSparse,          // one sparse (SPLADE) embedding per text (/embed_sparse): SparseEncoder::run
    kM3,              // bge-m3's lexical weights and ColBERT vectors per text: M3Embedder::run
  };
  Kind kind = Kind::kPooled;
  // Set before submit(), one entry per sequence:
  std::vector<PreparedText> texts;              // kPooled, kTokens, kSparse, kM3 (the batcher moves the ids out)
  std::vector<std::vector<int32_t>> sequences;  // the other kinds: each encoding's token ids

  // Written by the batcher, read after wait() returned true.
  Matrix pooled;                    // (texts, dimension) without normalisation: kPooled
  std::vector<Matrix> tokens;       // (tokens, hidden) per text: kTokens
  Matrix logits;                    // (sequences, num_labels): kSequenceLogits
  std::vector<Matrix> mask_logits;  // (<mask>s, vocab) per sequence: kMaskLogits
  std::vector<SparseVector> sparse;  // every non-zero weight, per text: kSparse; the lexical weights: kM3
  std::vector<Matrix> colbert;       // (tokens - 1, colbert dimension) per text: kM3
  std::optional<Error> error;       // a failed forward pass, or no pipeline for the kind
  double queue_seconds = 0;      // from submit() to its first pass
  double inference_seconds = 0;  // summed over its rows: the duration of the pass each row was in
  uint64_t last_pass = 0;        // number of the batcher's pass that finished it (1, 2, ...)

  // Sequences of the job (texts or sequences, by kind).
  size_t size() const { return embeds() ? texts.size() : sequences.size(); }

 private:
  friend class Batcher;
  bool embeds() const {
    return kind == Kind::kPooled || kind == Kind::kTokens || kind == Kind::kSparse || kind == Kind::kM3;
  }
  size_t length(size_t i) const { return embeds() ? texts[i].ids.size() : sequences[i].size(); }
  size_t scheduled_ = 0, finished_ = 0;
  uint64_t in_pass_ = 0;  // the last pass that took one of its sequences
  bool cancelled_ = false;
  Clock::time_point enqueued_;
  std::condition_variable done_cv_;
  bool done() const { return error.has_value() || finished_ == size(); }
};

// The pipelines whose run steps the batcher calls; a kind without its pipeline fails at submit().
struct Pipelines {
  const Embedder* embedder = nullptr;          // kPooled, kTokens
  const TextClassifier* classifier = nullptr;  // kSequenceLogits
  const FillMask* fill_mask = nullptr;         // kMaskLogits
  const SparseEncoder* sparse = nullptr;       // kSparse
  const M3Embedder* m3 = nullptr;              // kM3
};

struct BatcherOptions {
  size_t max_batch_tokens = 16384;  // real tokens per forward pass (a longer sequence goes alone)
  size_t max_batch_requests = 0;    // sequences per forward pass; 0: no limit
  std::chrono::milliseconds client_check{100};  // how often wait() asks whether the client is there
  // <mask> rows per kMaskLogits pass (each is a row of vocabulary size: 512 x 50265 floats is
  // 100 MB); a pass always takes its first sequence.
  size_t max_batch_mask_rows = 512;
  // Called on the batcher thread once the queue has stayed empty for `idle_after` since the last
  // pass (the server gives free memory back to the system there); empty: nothing.
  std::function<void()> on_idle;
  std::chrono::milliseconds idle_after{1000};
};

class Batcher {
 public:
  Batcher(Pipelines pipelines, BatcherOptions options, Metrics& metrics);
  Batcher(const Embedder& embedder, BatcherOptions options, Metrics& metrics)
      : Batcher(Pipelines{.embedder = &embedder}, options, metrics) {}
  ~Batcher();  // stop()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  void submit(const std::shared_ptr<Job>& job);
  // Waits until the job is done (true). Every client_check it asks client_alive(); when that says false,
  // the job's sequences still queued are dropped and wait() returns false at once.
  bool wait(Job& job, const std::function<bool()>& client_alive);
  // Sequences queued and not yet in a pass.
  size_t queued_sequences() const;
  // Forward passes run so far.
  uint64_t passes() const;
  // Finishes the pass under way and stops the thread; jobs still queued fail.
  void stop();

 private:
  struct Slot {
    std::shared_ptr<Job> job;
    size_t index;  // of the sequence in the job
  };
  void loop();
  std::vector<Slot> next_pass();  // under mutex_
  void run_pass(std::vector<Slot>& pass, uint64_t number);
  size_t mask_rows(const std::vector<int32_t>& ids) const;

  const Pipelines pipelines_;
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
