#pragma once
// The engine's one thread pool. parallel_for runs on the pool's workers and on the calling thread,
// so calls from several user threads at once never deadlock (a busy pool just means the caller
// does more of the work itself). A worker that runs out of work, and a caller waiting for the
// workers to finish its loop, spin for a short while (about a millisecond) before they sleep, so
// the many small parallel loops of a forward pass do not each pay a wake-up; OpenBLAS runs
// single-threaded inside the engine, so there is nothing to fight.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace roberta {

class ThreadPool {
 public:
  // The pool forward passes use. Hold the returned pointer for as long as you use the pool:
  // set_num_threads() replaces the global pool, and the old one lives until its last user is done.
  static std::shared_ptr<ThreadPool> global();
  explicit ThreadPool(unsigned num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned num_threads() const { return num_threads_; }
  // Runs fn(i) for every i in [0, n); returns when all have run; rethrows the first exception.
  void parallel_for(size_t n, const std::function<void(size_t)>& fn);

 private:
  struct Job {
    const std::function<void(size_t)>* fn;
    size_t n;
    std::atomic<size_t> next{0}, done{0};
    std::mutex mutex;
    std::condition_variable finished;
    std::exception_ptr error;
  };
  static void run(Job& job);
  void worker_loop();

  unsigned num_threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> jobs_;
  std::atomic<uint64_t> posted_{0};  // jobs ever posted: what a spinning worker watches
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace roberta
