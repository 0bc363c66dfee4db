#include "server/batcher.h"

#include <algorithm>

namespace roberta::server {

namespace {
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

Batcher::Batcher(Pipelines pipelines, BatcherOptions options, Metrics& metrics)
    : pipelines_(pipelines), options_(options), metrics_(metrics), thread_([this] { loop(); }) {}

Batcher::~Batcher() { stop(); }

void Batcher::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mutex_);
  for (const auto& job : queue_) {
    job->error = Error("the server is shutting down", ErrorKind::kIo);
    job->done_cv_.notify_all();
  }
  queue_.clear();
}

void Batcher::submit(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard lock(mutex_);
    job->enqueued_ = Clock::now();
    const size_t n = job->size();
    switch (job->kind) {
      case Job::Kind::kPooled:
      case Job::Kind::kTokens:
        if (!pipelines_.embedder)
          job->error = Error("the server has no embedding pipeline", ErrorKind::kInvalidModel);
        else if (job->kind == Job::Kind::kPooled)
          job->pooled = Matrix(n, pipelines_.embedder->dimension());
        else
          job->tokens.resize(n);
        break;
      case Job::Kind::kSequenceLogits:
        if (!pipelines_.classifier)
          job->error = Error("the model has no sequence classification head", ErrorKind::kInvalidModel);
        else
          job->logits = Matrix(n, static_cast<size_t>(pipelines_.classifier->config().num_labels()));
        break;
      case Job::Kind::kSparse:
        if (!pipelines_.sparse)
          job->error = Error("the model has no MLM head (lm_head.*), so it gives no sparse embeddings",
                             ErrorKind::kInvalidModel);
        else
          job->sparse.resize(n);
        break;
      case Job::Kind::kM3:
        if (!pipelines_.m3)
          job->error = Error("the model has no bge-m3 heads (colbert_linear, sparse_linear)", ErrorKind::kInvalidModel);
        else
          job->sparse.resize(n), job->colbert.resize(n);
        break;
      case Job::Kind::kMaskLogits:
        if (!pipelines_.fill_mask)
          job->error = Error("the model has no MLM head (lm_head.*) or no <mask> token", ErrorKind::kInvalidModel);
        else
          job->mask_logits.resize(n);
        break;
    }
    if (job->error) return;
    if (stop_) {
      job->error = Error("the server is shutting down", ErrorKind::kIo);
      return;
    }
    if (n == 0) return;
    queue_.push_back(job);
    queued_sequences_ += n;
    metrics_.set_gauge("te_queue_size", static_cast<double>(queued_sequences_));
  }
  wake_.notify_one();
}

bool Batcher::wait(Job& job, const std::function<bool()>& client_alive) {
  std::unique_lock lock(mutex_);
  while (!job.done()) {
    if (job.done_cv_.wait_for(lock, options_.client_check, [&] { return job.done(); })) break;
    lock.unlock();
    const bool alive = client_alive();
    lock.lock();
    if (!alive && !job.done()) {
      job.cancelled_ = true;  // next_pass() drops what is still queued
      return false;
    }
  }
  return true;
}

size_t Batcher::queued_sequences() const {
  std::lock_guard lock(mutex_);
  return queued_sequences_;
}

uint64_t Batcher::passes() const {
  std::lock_guard lock(mutex_);
  return passes_;
}

size_t Batcher::mask_rows(const std::vector<int32_t>& ids) const {
  const int32_t mask = pipelines_.fill_mask->tokenizer().mask_id().value_or(-1);
  return static_cast<size_t>(std::count(ids.begin(), ids.end(), mask));
}

std::vector<Batcher::Slot> Batcher::next_pass() {
  // Requests whose client has gone away leave the queue.
  for (auto it = queue_.begin(); it != queue_.end();) {
    if ((*it)->cancelled_) {
      queued_sequences_ -= (*it)->size() - (*it)->scheduled_;  // the handler counts it as dropped
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<Slot> pass;
  if (queue_.empty()) return pass;
  // One kind per pass: that of the oldest request not in the previous pass (number passes_), else
  // of the oldest request. So the kinds take turns.
  const Job* first = queue_.front().get();
  for (const auto& job : queue_)
    if (job->in_pass_ != passes_) {
      first = job.get();
      break;
    }
  const Job::Kind kind = first->kind;
  const size_t max_sequences = options_.max_batch_requests ? options_.max_batch_requests : SIZE_MAX;
  size_t tokens = 0, masks = 0;
  const auto take = [&](const std::shared_ptr<Job>& job) {
    if (job->kind != kind || job->scheduled_ == job->size() || pass.size() >= max_sequences) return false;
    const size_t n = job->length(job->scheduled_);
    const size_t m = kind == Job::Kind::kMaskLogits ? mask_rows(job->sequences[job->scheduled_]) : 0;
    // The budget counts real tokens; a pass always takes its first sequence, however long.
    if (!pass.empty() && (tokens + n > options_.max_batch_tokens || masks + m > options_.max_batch_mask_rows))
      return false;
    if (job->scheduled_ == 0) job->queue_seconds = seconds_since(job->enqueued_);
    job->in_pass_ = passes_ + 1;
    pass.push_back({job, job->scheduled_++});
    tokens += n;
    masks += m;
    return true;
  };
  for (const auto& job : queue_) take(job);  // round 1: one sequence of every request
  for (const auto& job : queue_)             // round 2: fill the budget, oldest first
    while (take(job)) {
    }
  queued_sequences_ -= pass.size();
  for (auto it = queue_.begin(); it != queue_.end();)
    it = (*it)->scheduled_ == (*it)->size() ? queue_.erase(it) : it + 1;
  metrics_.set_gauge("te_queue_size", static_cast<double>(queued_sequences_));
  metrics_.observe("te_batch_next_size", static_cast<double>(pass.size()));
  metrics_.observe("te_batch_next_tokens", static_cast<double>(tokens));
  return pass;
}

void Batcher::run_pass(std::vector<Slot>& pass, uint64_t number) {
  const Job::Kind kind = pass[0].job->kind;
  std::vector<PreparedText> texts;
  Batch batch;
  std::vector<size_t> masks;  // kMaskLogits: <mask> rows of each sequence
  {
    std::lock_guard lock(mutex_);  // the ids move out of the jobs: nothing else reads them now
    for (const Slot& slot : pass) {
      if (slot.job->embeds()) {
        texts.push_back(std::move(slot.job->texts[slot.index]));
        continue;
      }
      const std::vector<int32_t>& ids = slot.job->sequences[slot.index];
      batch.add_sequence(ids);
      if (kind == Job::Kind::kMaskLogits) masks.push_back(mask_rows(ids));
      std::vector<int32_t>().swap(slot.job->sequences[slot.index]);  // not needed any more
    }
  }
  const auto started = Clock::now();
  std::optional<Error> error;
  Matrix rows;                   // kPooled, kSequenceLogits: one row per sequence
  std::vector<Matrix> matrices;  // kTokens, kMaskLogits: one matrix per sequence
  std::vector<SparseVector> sparse;  // kSparse: every non-zero weight (each request keeps its top k)
  M3Output m3;                       // kM3: lexical weights and ColBERT vectors (each request takes its kind)
  try {
    switch (kind) {
      case Job::Kind::kPooled: {
        EmbedOptions options;
        options.normalize = false;  // each request normalises (and cuts `dimensions`) its own rows
        rows = pipelines_.embedder->run(texts, options);
        break;
      }
      case Job::Kind::kTokens: matrices = pipelines_.embedder->run_tokens(texts); break;
      case Job::Kind::kSparse: sparse = pipelines_.sparse->run(texts); break;
      case Job::Kind::kM3: m3 = pipelines_.m3->run(texts, {.dense = false, .sparse = true, .colbert = true}); break;
      case Job::Kind::kSequenceLogits: rows = pipelines_.classifier->run(batch); break;
      case Job::Kind::kMaskLogits: {
        const Matrix all = pipelines_.fill_mask->run(batch);  // every <mask> of the pass, in order
        size_t r = 0;
        for (const size_t m : masks) {
          if (r + m > all.rows)
            throw Error("the pass gave " + std::to_string(all.rows) + " <mask> rows, expected more", ErrorKind::kIo);
          Matrix& mine = matrices.emplace_back(m, all.cols);
          std::copy_n(all.row(r), m * all.cols, mine.data.begin());
          r += m;
        }
        break;
      }
    }
  } catch (const Error& e) {
    error = e;
  } catch (const std::exception& e) {
    error = Error(e.what(), ErrorKind::kIo);
  }
  const double secs = seconds_since(started);
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < pass.size(); ++i) {
    Job& job = *pass[i].job;
    if (job.cancelled_) continue;
    job.inference_seconds += secs;  // per row, as TEI sums it (the handler averages)
    const size_t at = pass[i].index;
    if (error) {
      if (!job.error) job.error = error;
    } else if (kind == Job::Kind::kPooled) {
      std::copy_n(rows.row(i), rows.cols, job.pooled.row(at));
    } else if (kind == Job::Kind::kSequenceLogits) {
      std::copy_n(rows.row(i), rows.cols, job.logits.row(at));
    } else if (kind == Job::Kind::kTokens) {
      job.tokens[at] = std::move(matrices[i]);
    } else if (kind == Job::Kind::kSparse) {
      job.sparse[at] = std::move(sparse[i]);
    } else if (kind == Job::Kind::kM3) {
      job.sparse[at] = std::move(m3.lexical[i]);
      job.colbert[at] = std::move(m3.colbert[i]);
    } else {
      job.mask_logits[at] = std::move(matrices[i]);
    }
    ++job.finished_;
    job.last_pass = number;
    if (job.done()) job.done_cv_.notify_all();
  }
}

void Batcher::loop() {
  bool idle_done = true;  // on_idle ran since the last pass
  for (;;) {
    std::vector<Slot> pass;
    uint64_t number = 0;
    {
      std::unique_lock lock(mutex_);
      const auto work = [&] { return stop_ || !queue_.empty(); };
      if (!idle_done && options_.on_idle && !wake_.wait_for(lock, options_.idle_after, work)) {
        lock.unlock();
        options_.on_idle();
        idle_done = true;
        continue;
      }
      wake_.wait(lock, work);
      if (stop_) return;
      pass = next_pass();
      number = pass.empty() ? 0 : ++passes_;
    }
    if (!pass.empty()) {
      run_pass(pass, number);
      idle_done = false;
    }
  }
}

}  // namespace roberta::server
