// The engine's thread pool: results, exceptions, and set_num_threads while other threads use the
// pool (regression: it destroyed the pool under them — a use-after-free; run under ASan/TSan by
// tools/sanitize.sh).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "roberta/threads.h"
#include "util/thread_pool.h"

namespace {

TEST(ThreadPool, RunsEveryIndexOnceAndRethrows) {
  std::vector<std::atomic<int>> hits(1000);
  roberta::ThreadPool::global()->parallel_for(hits.size(), [&](size_t i) { hits[i]++; });
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_THROW(roberta::ThreadPool::global()->parallel_for(
                   10, [](size_t i) { if (i == 3) throw std::runtime_error("boom"); }),
               std::runtime_error);
}

TEST(ThreadPool, SetNumThreadsWhileOtherThreadsUseThePool) {
  std::atomic<bool> stop{false};
  std::atomic<size_t> wrong{0}, loops{0};
  std::vector<std::thread> users;
  for (int t = 0; t < 4; ++t)
    users.emplace_back([&] {
      while (!stop) {
        std::vector<long> out(256);
        roberta::ThreadPool::global()->parallel_for(out.size(), [&](size_t i) {
          long s = 0;
          for (size_t k = 0; k <= i * 50; ++k) s += static_cast<long>(k % 7);
          out[i] = s;
        });
        for (size_t i = 0; i < out.size(); ++i) {
          long s = 0;
          for (size_t k = 0; k <= i * 50; ++k) s += static_cast<long>(k % 7);
          wrong += out[i] != s;
        }
        ++loops;
      }
    });
  // At least 1000 resizes, and on until the users have finished a few loops among them (on a busy
  // machine the 1000 resizes alone took 3 ms, before any user had finished one loop); at most 60 s.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int i = 0; (i < 1000 || loops.load() < 8) && std::chrono::steady_clock::now() < deadline; ++i) {
    roberta::set_num_threads(1 + i % 3);
    std::this_thread::yield();
  }
  stop = true;
  for (auto& u : users) u.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_GT(loops.load(), 0u);
  roberta::set_num_threads(0);
  EXPECT_GE(roberta::num_threads(), 1u);
}

}  // namespace
