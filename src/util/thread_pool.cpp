#include "util/thread_pool.h"

#include <cblas.h>

#include <chrono>
#include <cstdlib>

#include "roberta/threads.h"

namespace roberta {

namespace {
unsigned g_requested_threads = 0;  // 0: all cores
std::mutex g_global_mutex;
std::shared_ptr<ThreadPool> g_pool;  // callers hold a reference while they use it

// How long an idle worker watches for work, and a caller for the end of its loop, before sleeping.
constexpr int kSpinMicroseconds = 1000;

inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

// Spins while busy() holds, for at most kSpinMicroseconds.
template <typename Busy>
void spin_while(const Busy& busy) {
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicroseconds);
  for (unsigned i = 1; busy(); ++i) {
    if (i % 64 == 0 && std::chrono::steady_clock::now() > spin_until) return;
    cpu_relax();
  }
}
}  // namespace

void set_num_threads(unsigned n) {
  std::lock_guard lock(g_global_mutex);
  g_requested_threads = n;
  g_pool.reset();  // rebuilt on next use; callers still holding the old pool finish on it
}

unsigned num_threads() {
  std::lock_guard lock(g_global_mutex);
  if (g_pool) return g_pool->num_threads();
  return g_requested_threads ? g_requested_threads : std::max(1u, std::thread::hardware_concurrency());
}

std::shared_ptr<ThreadPool> ThreadPool::global() {
  std::lock_guard lock(g_global_mutex);
  if (!g_pool) {
    unsigned n = g_requested_threads ? g_requested_threads : std::max(1u, std::thread::hardware_concurrency());
    // We split GEMMs over our own threads; OpenBLAS's threads would fight ours for the cores.
    openblas_set_num_threads(1);
    g_pool = std::make_shared<ThreadPool>(n);
  }
  return g_pool;
}

ThreadPool::ThreadPool(unsigned num_threads) : num_threads_(std::max(1u, num_threads)) {
  for (unsigned i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run(Job& job) {
  for (;;) {
    const size_t i = job.next.fetch_add(1);
    if (i >= job.n) return;
    try {
      (*job.fn)(i);
    } catch (...) {
      std::lock_guard lock(job.mutex);
      if (!job.error) job.error = std::current_exception();
    }
    if (job.done.fetch_add(1) + 1 == job.n) {
      std::lock_guard lock(job.mutex);
      job.finished.notify_all();
    }
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;  // posted_ when this worker last looked at the queue
  bool queue_had_more = false;
  for (;;) {
    // Spin briefly for the next job before sleeping on the condition variable.
    spin_while([&] { return !queue_had_more && posted_.load(std::memory_order_acquire) == seen; });
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      seen = posted_.load(std::memory_order_relaxed);
      while (!jobs_.empty() && jobs_.front()->next.load() >= jobs_.front()->n) jobs_.pop_front();  // all handed out
      queue_had_more = jobs_.size() > 1;
      if (jobs_.empty()) continue;
      job = jobs_.front();
    }
    run(*job);
    std::lock_guard lock(mutex_);
    if (!jobs_.empty() && jobs_.front() == job) jobs_.pop_front();
  }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (n == 1 || workers_.empty()) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(job);
    posted_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  run(*job);
  // The caller, done with its share, watches for the workers to finish theirs before it sleeps:
  // sleeping on the condition variable and being woken adds microseconds to every parallel_for,
  // which add up over the many loops of a short forward pass
  // (docs/performance.md#figures-behind-the-code).
  spin_while([&] { return job->done.load(std::memory_order_acquire) != job->n; });
  {
    std::unique_lock lock(job->mutex);
    job->finished.wait(lock, [&] { return job->done.load() == job->n; });
  }
  {
    std::lock_guard lock(mutex_);
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
      if (*it == job) {
        jobs_.erase(it);
        break;
      }
  }
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace roberta
