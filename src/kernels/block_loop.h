#pragma once
// The loop every packed GEMM shares (fp32, bf16, int8): row blocks x 32-column panels x k slices,
// split over the thread pool. Internal to the kernels.
#include <algorithm>
#include <cstddef>
#include <memory>

#include "util/thread_pool.h"

namespace roberta::kernels {

constexpr size_t kPanelColumns = 32;

// Runs block(r, rows, p, k0, k1) over every (row block, panel, k slice) of y (M, N), split over the
// thread pool as tasks of (a contiguous range of panels) x (a band of rows), then
// finish(m0, m1, col0, col1) on each finished tile.
// Rows go in chunks of 16 blocks; within a chunk each panel is walked from start to end, so a
// thread streams its weights in one sequential pass while the chunk of x stays in cache, and each
// k slice of the panel is reused by all the chunk's blocks. Large products get about 8 tasks per
// thread (panel groups x row bands), taken dynamically: with only 4 tasks per thread, N = 768
// (12 int8 panels) left one thread idle for up to a sixth of the product while the other ran a
// two-panel task.
// `panel_columns`: the width of a panel (32 for fp32 and bf16, 64 for int8).
template <typename Block, typename Finish>
void for_each_block(size_t M, size_t N, size_t depth, size_t slice, size_t block_rows, const Block& block,
                    const Finish& finish, size_t panel_columns = kPanelColumns) {
  const size_t P = (N + panel_columns - 1) / panel_columns;
  const size_t chunk = block_rows * 16, chunks = (M + chunk - 1) / chunk;
  const std::shared_ptr<ThreadPool> pool_ref = ThreadPool::global();
  ThreadPool& pool = *pool_ref;
  const size_t threads = pool.num_threads();
  const size_t groups = std::min(P, threads * (M > chunk ? 4 : 1));
  const size_t bands = threads == 1 ? 1 : std::min(chunks, (8 * threads + groups - 1) / groups);
  pool.parallel_for(groups * bands, [&](size_t t) {
    const size_t g = t % groups, b = t / groups;
    const size_t p0 = P * g / groups, p1 = P * (g + 1) / groups;
    const size_t c0 = chunks * b / bands, c1 = chunks * (b + 1) / bands;
    for (size_t m0 = c0 * chunk; m0 < std::min(M, c1 * chunk); m0 += chunk) {
      const size_t m1 = std::min(M, m0 + chunk);
      for (size_t p = p0; p < p1; ++p)
        for (size_t k0 = 0; k0 < depth; k0 += slice) {
          const size_t k1 = std::min(depth, k0 + slice);
          for (size_t r = m0; r < m1; r += block_rows) block(r, std::min(block_rows, m1 - r), p, k0, k1);
        }
      finish(m0, m1, p0 * panel_columns, std::min(N, p1 * panel_columns));
    }
  });
}

}  // namespace roberta::kernels
