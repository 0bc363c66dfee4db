#pragma once
// The loop every packed GEMM shares (fp32, bf16, int8): row blocks x 32-column panels x k slices,
// split over the thread pool. Internal to the kernels.
#include <algorithm>
#include <cstddef>
#include <memory>

#include "rows_done.h"
#include "util/thread_pool.h"

namespace roberta::kernels {

constexpr size_t kPanelColumns = 32;
// for_each_block's row chunks: this many register blocks of rows.
constexpr size_t kChunkBlocks = 16;

// How for_each_block splits a product over the pool: `groups` groups of panels, each the same
// number of panels, times `bands` bands of row blocks whose sizes differ by at most one block.
struct BlockSplit {
  size_t groups, bands;
};

// Every task the same size, and their number a multiple of the thread count where the shape
// allows: with unequal tasks (groups of 4 and 5 panels, bands of 5 and 6 row chunks) one thread
// sits idle at the end of each product while another finishes a larger task, a large part of the
// multi-threaded rate lost (docs/performance.md#figures-behind-the-code). Large products get about
// 8 tasks per thread, taken dynamically; products of one row chunk or less are split by panels
// only, so the weights are read once.
inline BlockSplit split_blocks(size_t panels, size_t blocks, size_t chunk_blocks, size_t threads) {
  if (threads <= 1 || panels == 0) return {1, 1};
  const size_t chunks = (blocks + chunk_blocks - 1) / chunk_blocks;
  const size_t want = std::min(panels, threads * (chunks > 1 ? 4 : 1));
  size_t groups = 0, fallback = 1;
  for (size_t d = want; d >= 1 && !groups; --d)
    if (panels % d == 0) {
      if (d % threads == 0) groups = d;
      else if (fallback == 1) fallback = d;
    }
  if (!groups) groups = fallback;
  if (chunks <= 1) return {groups, 1};
  size_t bands = std::min(chunks, (8 * threads + groups - 1) / groups);
  while ((groups * bands) % threads != 0 && bands < chunks) ++bands;
  return {groups, bands};
}

// The split for a product whose tasks each compute whole rows of y, for a RowsDone: all panels in
// one group and the rows in bands, their count a multiple of the thread count; {0, 0} where there
// are fewer row chunks than threads (there each task reading the whole weight would cost more
// than a separate pass over the rows saves).
inline BlockSplit split_whole_rows(size_t blocks, size_t chunk_blocks, size_t threads) {
  const size_t chunks = (blocks + chunk_blocks - 1) / chunk_blocks;
  if (threads <= 1) return {1, 1};
  if (chunks < threads) return {0, 0};
  return {1, std::min(blocks, (chunks + threads - 1) / threads * threads)};
}

// rows_done over all M rows of y (N columns) after a product, in tasks of a few rows.
inline void rows_done_after(size_t M, size_t N, const RowsDone& rows_done) {
  const size_t rows_per_task = std::max<size_t>(1, 16384 / std::max<size_t>(N, 1));
  ThreadPool::global()->parallel_for((M + rows_per_task - 1) / rows_per_task, [&](size_t t) {
    rows_done(t * rows_per_task, std::min(M, (t + 1) * rows_per_task));
  });
}

// Runs block(r, rows, p, k0, k1) over every (row chunk, panel, k slice) of y (M, N), split over the
// thread pool as tasks of (a group of consecutive panels) x (a band of row blocks) (split_blocks),
// then finish(m0, m1, col0, col1) on each finished tile (a chunk of rows times a panel, in L1).
// Rows go in chunks of kChunkBlocks blocks of block_rows; `block` gets a whole chunk (rows <= 16 blocks, a
// multiple of block_rows except at the end of M) and walks its register blocks itself. Within a
// chunk each panel is walked from start to end, so a thread streams its weights in one sequential
// pass while the chunk of x stays in cache, and each k slice of the panel is reused by all the
// chunk's blocks.
// `panel_columns`: the width of a panel (32 for fp32 and bf16, 64 for int8).
// `rows_done` (may be null): called on whole finished rows, after `finish`; by the tasks themselves
// (split_whole_rows) where the rows are many enough, else after the product (rows_done_after).
template <typename Block, typename Finish>
void for_each_block(size_t M, size_t N, size_t depth, size_t slice, size_t block_rows, const Block& block,
                    const Finish& finish, size_t panel_columns = kPanelColumns, const RowsDone* rows_done = nullptr) {
  const size_t P = (N + panel_columns - 1) / panel_columns;
  const size_t blocks = (M + block_rows - 1) / block_rows, chunk = block_rows * kChunkBlocks;
  const std::shared_ptr<ThreadPool> pool_ref = ThreadPool::global();
  ThreadPool& pool = *pool_ref;
  BlockSplit split{0, 0};
  if (rows_done) split = split_whole_rows(blocks, kChunkBlocks, pool.num_threads());
  const bool rows_in_tasks = split.groups != 0;
  if (!rows_in_tasks) split = split_blocks(P, blocks, kChunkBlocks, pool.num_threads());
  const size_t groups = split.groups, bands = split.bands;
  pool.parallel_for(groups * bands, [&](size_t t) {
    const size_t g = t % groups, b = t / groups;
    const size_t p0 = P * g / groups, p1 = P * (g + 1) / groups;
    const size_t r0 = blocks * b / bands * block_rows, r1 = std::min(M, blocks * (b + 1) / bands * block_rows);
    for (size_t m0 = r0; m0 < r1; m0 += chunk) {
      const size_t m1 = std::min(r1, m0 + chunk);
      for (size_t p = p0; p < p1; ++p) {
        for (size_t k0 = 0; k0 < depth; k0 += slice) {
          const size_t k1 = std::min(depth, k0 + slice);
          block(m0, m1 - m0, p, k0, k1);
        }
        finish(m0, m1, p * panel_columns, std::min(N, (p + 1) * panel_columns));
      }
      if (rows_in_tasks) (*rows_done)(m0, m1);
    }
  });
  if (rows_done && !rows_in_tasks) rows_done_after(M, N, *rows_done);
}

}  // namespace roberta::kernels
