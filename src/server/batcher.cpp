#include "server/batcher.h"

namespace roberta::server {

namespace {
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

Batcher::Batcher(const Embedder& embedder, BatcherOptions options, Metrics& metrics)
    : embedder_(embedder), options_(options), metrics_(metrics), thread_([this] { loop(); }) {}

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
    if (job->kind == Job::Kind::kPooled)
      job->pooled = Matrix(job->texts.size(), embedder_.dimension());
    else
      job->tokens.resize(job->texts.size());
    if (stop_) {
      job->error = Error("the server is shutting down", ErrorKind::kIo);
      return;
    }
    if (job->texts.empty()) return;
    queue_.push_back(job);
    queued_sequences_ += job->texts.size();
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

std::vector<Batcher::Slot> Batcher::next_pass() {
  // Requests whose client has gone away leave the queue.
  for (auto it = queue_.begin(); it != queue_.end();) {
    if ((*it)->cancelled_) {
      queued_sequences_ -= (*it)->texts.size() - (*it)->scheduled_;  // the handler counts it as dropped
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<Slot> pass;
  if (queue_.empty()) return pass;
  // One kind per pass (pooled rows or token rows); the oldest request decides which.
  const Job::Kind kind = queue_.front()->kind;
  const size_t max_sequences = options_.max_batch_requests ? options_.max_batch_requests : SIZE_MAX;
  size_t tokens = 0;
  const auto take = [&](const std::shared_ptr<Job>& job) {
    if (job->kind != kind || job->scheduled_ == job->texts.size() || pass.size() >= max_sequences) return false;
    const size_t n = job->texts[job->scheduled_].ids.size();
    // The budget counts real tokens; a pass always takes its first sequence, however long.
    if (!pass.empty() && tokens + n > options_.max_batch_tokens) return false;
    if (job->scheduled_ == 0) job->queue_seconds = seconds_since(job->enqueued_);
    pass.push_back({job, job->scheduled_++});
    tokens += n;
    return true;
  };
  for (const auto& job : queue_) take(job);  // round 1: one sequence of every request
  for (const auto& job : queue_)             // round 2: fill the budget, oldest first
    while (take(job)) {
    }
  queued_sequences_ -= pass.size();
  for (auto it = queue_.begin(); it != queue_.end();)
    it = (*it)->scheduled_ == (*it)->texts.size() ? queue_.erase(it) : it + 1;
  metrics_.set_gauge("te_queue_size", static_cast<double>(queued_sequences_));
  metrics_.observe("te_batch_next_size", static_cast<double>(pass.size()));
  metrics_.observe("te_batch_next_tokens", static_cast<double>(tokens));
  return pass;
}

void Batcher::run_pass(std::vector<Slot>& pass, uint64_t number) {
  std::vector<PreparedText> texts(pass.size());
  {
    std::lock_guard lock(mutex_);  // the ids move out of the jobs: nothing else reads them now
    for (size_t i = 0; i < pass.size(); ++i) texts[i] = std::move(pass[i].job->texts[pass[i].index]);
  }
  const auto started = Clock::now();
  std::optional<Error> error;
  Matrix pooled;
  std::vector<Matrix> tokens;
  try {
    if (pass[0].job->kind == Job::Kind::kPooled) {
      EmbedOptions options;
      options.normalize = false;  // each request normalises (and cuts `dimensions`) its own rows
      pooled = embedder_.run(texts, options);
    } else {
      tokens = embedder_.run_tokens(texts);
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
    if (error) {
      if (!job.error) job.error = error;
    } else if (job.kind == Job::Kind::kPooled) {
      std::copy_n(pooled.row(i), pooled.cols, job.pooled.row(pass[i].index));
    } else {
      job.tokens[pass[i].index] = std::move(tokens[i]);
    }
    ++job.finished_;
    job.last_pass = number;
    if (job.done()) job.done_cv_.notify_all();
  }
}

void Batcher::loop() {
  for (;;) {
    std::vector<Slot> pass;
    uint64_t number = 0;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      pass = next_pass();
      number = pass.empty() ? 0 : ++passes_;
    }
    if (!pass.empty()) run_pass(pass, number);
  }
}

}  // namespace roberta::server
