// The fp32 packed GEMM against a float64 reference and with its fused activation, the tiles_done /
// rows_done callbacks of every kernel, and the split of a product over the pool (BlockSplit).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/activations.h"
#include "kernels/block_loop.h"
#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"
#include "roberta/threads.h"
#include "rows_done_check.h"

namespace {

// Here, in packed_gemm_int8_test.cpp and in packed_gemm_bf16_amx_test.cpp, the products are checked
// against a float64 reference over shapes that hit every edge: rows not a multiple of the row block
// (fp32: 12 on Intel's AVX-512 above 32 rows, 6 with AVX2, else 8; bf16: 12 with AVX512-BF16, else
// the fp32 kernel's on widened values), every count of last rows of a 12-row block, rows not a
// multiple of the 16-block chunk, columns not a multiple of the 32-column panel, k in one pass and
// in two (k slices: at most 1024 deep for fp32 and bf16, 3072 for int8), with and without bias, a
// strided output, and the fused activation.

TEST(PackedGemm, MatchesFloat64Reference) {
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::printf("  kernel: %s\n", roberta::kernels::packed_gemm_isa());
  // 33-47 end a 12-row block with each count of rows from 1 to 11
  for (size_t M : {1, 3, 8, 12, 13, 30, 33, 37, 38, 39, 42, 43, 44, 47, 64, 70, 100, 197}) {
    for (size_t N : {1, 31, 32, 33, 100, 768}) {
      for (size_t K : {1, 7, 256, 300, 770, 1030}) {  // 1030: two k passes
        if (M * N * K > 20'000'000) continue;
        std::vector<float> x(M * K), w(N * K), bias(N);
        for (auto& v : x) v = dist(rng);
        for (auto& v : w) v = dist(rng);
        for (auto& v : bias) v = dist(rng);
        const roberta::kernels::PackedWeight packed(w.data(), N, K);
        for (const bool with_bias : {false, true}) {
          const size_t ldy = N + 5;
          std::vector<float> y(M * ldy, -7.0f);
          roberta::kernels::packed_linear(y.data(), ldy, x.data(), packed, with_bias ? bias.data() : nullptr, M);
          double max_err = 0;
          for (size_t m = 0; m < M; ++m) {
            for (size_t n = 0; n < N; ++n) {
              double want = with_bias ? bias[n] : 0.0;
              for (size_t k = 0; k < K; ++k) want += static_cast<double>(x[m * K + k]) * w[n * K + k];
              max_err = std::max(max_err, std::abs(want - y[m * ldy + n]) / std::sqrt(static_cast<double>(K)));
            }
            for (size_t n = N; n < ldy; ++n) ASSERT_EQ(y[m * ldy + n], -7.0f) << "wrote past N";
          }
          EXPECT_LT(max_err, 1e-5) << "M=" << M << " N=" << N << " K=" << K << " bias=" << with_bias;
        }
      }
    }
  }
}

// FusedActivationEqualsSeparatePass for one shape.
void check_fused_activation(size_t M, size_t K) {
  SCOPED_TRACE("M=" + std::to_string(M) + " K=" + std::to_string(K));
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t N = 300, ldy = N + 2;
  std::vector<float> x(M * K), w(N * K), bias(N);
  for (auto& v : x) v = dist(rng);
  for (auto& v : w) v = dist(rng);
  for (auto& v : bias) v = dist(rng);
  const roberta::kernels::PackedWeight packed(w.data(), N, K);
  const roberta::kernels::PackedWeightBf16 packed_bf16(w.data(), N, K);
  for (const auto act : {roberta::kernels::Activation::kGelu, roberta::kernels::Activation::kRelu, roberta::kernels::Activation::kTanh}) {
    std::vector<float> plain(M * ldy, -7.0f), fused(M * ldy, -7.0f), plain_bf16(M * ldy), fused_bf16(M * ldy);
    roberta::kernels::packed_linear(plain.data(), ldy, x.data(), packed, bias.data(), M);
    roberta::kernels::packed_linear(fused.data(), ldy, x.data(), packed, bias.data(), M, act);
    roberta::kernels::packed_linear(plain_bf16.data(), ldy, x.data(), packed_bf16, bias.data(), M);
    roberta::kernels::packed_linear(fused_bf16.data(), ldy, x.data(), packed_bf16, bias.data(), M, act);
    std::vector<float> separate = plain, separate_bf16 = plain_bf16;  // the pass the model ran before fusing
    roberta::kernels::bias_activation(separate.data(), nullptr, M, ldy, act);
    roberta::kernels::bias_activation(separate_bf16.data(), nullptr, M, ldy, act);
    for (size_t m = 0; m < M; ++m) {
      for (size_t n = 0; n < N; ++n) {
        ASSERT_EQ(fused[m * ldy + n], separate[m * ldy + n]) << m << "," << n;
        ASSERT_EQ(fused_bf16[m * ldy + n], separate_bf16[m * ldy + n]) << m << "," << n;
        const float want = roberta::kernels::activate(act, plain[m * ldy + n]);
        ASSERT_NEAR(fused[m * ldy + n], want, 1e-6 * std::max(1.0f, std::abs(want)));
      }
      ASSERT_EQ(fused[m * ldy + N], -7.0f) << "wrote past N";
    }
  }
}

// The activation applied by the GEMM's epilogue equals the activation applied afterwards, on
// every tile of a product split over several tasks and row chunks: with one k slice and two (GELU
// then applied by the store of the last one), in large and small (<= 32 rows) products.
TEST(PackedGemm, FusedActivationEqualsSeparatePass) {
  for (const auto& [M, K] : {std::pair<size_t, size_t>{197, 64}, {197, 1030}, {20, 1030}})
    check_fused_activation(M, K);
}

// tiles_done and rows_done see each element / row of y once, final, on every kernel, from fp32 x
// and from x converted beforehand (rows_done_check.h).
TEST(PackedGemm, RowsDoneAndTilesDoneSeeFinalValuesOnce) {
  std::mt19937 rng(12);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t N = 768, K = 300;
  std::vector<float> w(N * K);
  for (auto& v : w) v = dist(rng);
  const auto apply = [](auto&&... args) { roberta::kernels::packed_linear(args...); };
  expect_rows_done_sees_final_rows(roberta::kernels::PackedWeight(w.data(), N, K), N, K, apply);
  expect_rows_done_sees_final_rows(roberta::kernels::PackedWeightBf16(w.data(), N, K), N, K, apply);
  expect_rows_done_sees_final_rows(roberta::kernels::PackedWeightInt8(w.data(), N, K), N, K, apply);
  const auto from_pairs = [K](float* y, size_t ldy, const float* x, const auto& packed, const float* bias, size_t M,
                              auto act, auto rows_done, auto tiles_done) {
    std::vector<uint32_t> pairs(M * ((K + 1) / 2));
    roberta::kernels::to_bf16_pairs(x, M, K, pairs.data());
    roberta::kernels::packed_linear(y, ldy, roberta::kernels::Bf16Rows{pairs.data()}, packed, bias, M, act, rows_done,
                                    tiles_done);
  };
  expect_rows_done_sees_final_rows(roberta::kernels::PackedWeightBf16(w.data(), N, K), N, K, from_pairs);
  const auto from_quads = [K](float* y, size_t ldy, const float* x, const auto& packed, const float* bias, size_t M,
                              auto act, auto rows_done, auto tiles_done) {
    std::vector<uint32_t> quads(M * ((K + 3) / 4));
    std::vector<float> scales(M);
    roberta::kernels::quantize_rows(x, M, K, quads.data(), scales.data());
    roberta::kernels::packed_linear(y, ldy, roberta::kernels::QuantizedRows{quads.data(), scales.data()}, packed, bias,
                                    M, act, rows_done, tiles_done);
  };
  expect_rows_done_sees_final_rows(roberta::kernels::PackedWeightInt8(w.data(), N, K), N, K, from_quads);
}

}  // namespace

// The split of a product over the pool: every task the same number of panels, bands that differ by
// at most one row block, a task count that is a multiple of the threads where the shape allows it,
// and no row split for products of one row chunk (their weights are then read once).
TEST(BlockSplit, EqualTasksAMultipleOfTheThreads) {
  using roberta::kernels::split_blocks;
  for (size_t threads : {1, 2, 3, 4, 8})
    for (size_t panels : {1, 2, 3, 7, 12, 24, 36, 37, 48, 72, 96})
      for (size_t blocks : {1, 3, 16, 17, 100, 171, 1000}) {
        const auto s = split_blocks(panels, blocks, 16, threads);
        SCOPED_TRACE(::testing::Message() << threads << " threads, " << panels << " panels, " << blocks << " blocks");
        const size_t chunks = (blocks + 15) / 16;
        ASSERT_GE(s.groups, 1u);
        ASSERT_GE(s.bands, 1u);
        EXPECT_EQ(panels % s.groups, 0u);
        EXPECT_LE(s.bands, chunks);
        if (threads == 1 || chunks == 1) {
          EXPECT_EQ(s.bands, 1u);
        }
        if (threads == 1) {
          EXPECT_EQ(s.groups, 1u);
        }
        // Where some divisor of the panels is a multiple of the threads, the tasks divide evenly.
        bool divisible = false;
        for (size_t d = threads; d <= panels; d += threads) divisible |= panels % d == 0;
        if (threads > 1 && divisible) {
          EXPECT_EQ(s.groups * s.bands % threads, 0u);
        }
        if (threads > 1 && divisible && chunks > 1) {
          EXPECT_GE(s.groups * s.bands, 2 * threads);
        }
      }
  // The shapes of roberta-base at 1024 tokens on two threads (int8 panels of 64 columns, 6-row blocks).
  EXPECT_EQ(split_blocks(12, 171, 16, 2).groups, 6u);   // N = 768
  EXPECT_EQ(split_blocks(36, 171, 16, 2).groups, 6u);   // N = 2304
  EXPECT_EQ(split_blocks(48, 171, 16, 2).groups, 8u);   // N = 3072
}

// The split for products whose tasks take whole rows (for a RowsDone): one group of all panels,
// bands a multiple of the threads and at most one per row block; none where the row chunks are
// fewer than the threads.
TEST(BlockSplit, WholeRowsWhereEveryThreadGetsAChunk) {
  using roberta::kernels::split_whole_rows;
  for (size_t threads : {1, 2, 3, 4, 8})
    for (size_t blocks : {1, 3, 16, 17, 31, 32, 33, 100, 171, 1000}) {
      SCOPED_TRACE(::testing::Message() << threads << " threads, " << blocks << " blocks");
      const auto s = split_whole_rows(blocks, 16, threads);
      const size_t chunks = (blocks + 15) / 16;
      if (threads == 1) {
        EXPECT_EQ(s.groups, 1u);
        EXPECT_EQ(s.bands, 1u);
      } else if (chunks < threads) {
        EXPECT_EQ(s.groups, 0u);
        EXPECT_EQ(s.bands, 0u);
      } else {
        EXPECT_EQ(s.groups, 1u);
        EXPECT_GE(s.bands, chunks);  // no band longer than a chunk
        EXPECT_LE(s.bands, blocks);  // no empty band
        if (s.bands < blocks) {
          EXPECT_EQ(s.bands % threads, 0u);
        }
      }
    }
  EXPECT_EQ(split_whole_rows(171, 16, 2).bands, 12u);  // 1024 rows in int8's 6-row blocks
}

// for_each_block visits each (row block, panel, k slice) once, in k order within a tile, and
// finishes each (row chunk, panel) tile once after its last slice, whatever the pool size.
TEST(BlockSplit, ForEachBlockCoversEveryBlockOnce) {
  for (size_t M : {1, 5, 6, 95, 96, 97, 600, 1024})
    for (size_t N : {64, 100, 768}) {
      const size_t K = 500, slice = 192, rows = 6, cols = 64;
      const size_t P = (N + cols - 1) / cols, S = (K + slice - 1) / slice;
      std::vector<std::atomic<int>> seen(M * P * S);
      std::vector<std::atomic<int>> finished(M * N);
      roberta::kernels::for_each_block(
          M, N, K, slice, rows,
          [&](size_t r, size_t n, size_t p, size_t k0, size_t k1) {
            EXPECT_EQ(k1, std::min(K, k0 + slice));
            for (size_t m = r; m < r + n; ++m) {
              if (k0 > 0) {
                EXPECT_EQ(seen[(m * P + p) * S + k0 / slice - 1].load(), 1);
              }
              seen[(m * P + p) * S + k0 / slice]++;
            }
          },
          [&](size_t m0, size_t m1, size_t c0, size_t c1) {
            for (size_t m = m0; m < m1; ++m)
              for (size_t c = c0; c < c1; ++c) {
                EXPECT_EQ(seen[(m * P + c / cols) * S + S - 1].load(), 1);
                finished[m * N + c]++;
              }
          },
          cols);
      for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << "M " << M << " N " << N << " at " << i;
      for (size_t i = 0; i < finished.size(); ++i) ASSERT_EQ(finished[i].load(), 1) << "M " << M << " N " << N;
    }
}

// With a RowsDone, for_each_block reports every row once, and only when every tile of the row is
// finished: inside the tasks where the rows are many, after the product where they are few; on
// 1, 2 and 3 threads.
TEST(BlockSplit, RowsDoneOnceEachRowAfterItsLastTile) {
  for (unsigned threads : {1u, 2u, 3u}) {
    roberta::set_num_threads(threads);
    for (size_t M : {1, 6, 95, 97, 200, 600, 1024})
      for (size_t N : {64, 100, 768}) {
        SCOPED_TRACE(::testing::Message() << threads << " threads, M " << M << " N " << N);
        const size_t K = 500, slice = 192, rows = 6, cols = 64;
        std::vector<std::atomic<int>> finished(M * N), reported(M);
        const roberta::kernels::RowsDone done = [&](size_t m0, size_t m1) {
          for (size_t m = m0; m < m1; ++m) {
            for (size_t c = 0; c < N; ++c) ASSERT_EQ(finished[m * N + c].load(), 1) << "row " << m << " col " << c;
            reported[m]++;
          }
        };
        roberta::kernels::for_each_block(
            M, N, K, slice, rows, [](size_t, size_t, size_t, size_t, size_t) {},
            [&](size_t m0, size_t m1, size_t c0, size_t c1) {
              for (size_t m = m0; m < m1; ++m)
                for (size_t c = c0; c < c1; ++c) finished[m * N + c]++;
            },
            cols, &done);
        for (size_t m = 0; m < M; ++m) ASSERT_EQ(reported[m].load(), 1) << "row " << m;
      }
  }
  roberta::set_num_threads(0);
}
