#pragma once
// Shared by the packed GEMM and oneDNN tests: a product's tiles_done and rows_done see each element
// / row of y once, in its final state (activation applied), and every tile of a row before the
// row's rows_done.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <random>
#include <vector>

#include "kernels/activation.h"
#include "kernels/rows_done.h"

// apply(y, ldy, x, weight, bias, M, act, rows_done, tiles_done) runs the product; snapshots of the
// rows taken in rows_done and of the tiles taken in tiles_done must equal y after the product, for
// few rows (rows_done after the product) and many (inside the tasks), dense and strided y.
template <class Weight, class Apply>
void expect_rows_done_sees_final_rows(const Weight& packed, size_t N, size_t K, const Apply& apply) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (size_t M : {5, 200, 700})
    for (size_t ldy : {N, N + 5}) {
      SCOPED_TRACE(::testing::Message() << "M " << M << " ldy " << ldy);
      std::vector<float> x(M * K), bias(N);
      for (auto& v : x) v = dist(rng);
      for (auto& v : bias) v = dist(rng);
      std::vector<float> y(M * ldy, -7.0f), snapshot(M * ldy, -9.0f), tile_snapshot(M * ldy, -9.0f);
      std::vector<std::atomic<int>> reported(M), tiled(M * N);
      std::atomic<int> odd_c0{0}, row_before_its_tiles{0};
      const roberta::kernels::TilesDone tiles = [&](size_t m0, size_t m1, size_t c0, size_t c1) {
        if (c0 % 2) odd_c0++;
        for (size_t m = m0; m < m1; ++m)
          for (size_t n = c0; n < c1; ++n) {
            tile_snapshot[m * ldy + n] = y[m * ldy + n];
            tiled[m * N + n]++;
          }
      };
      const roberta::kernels::RowsDone done = [&](size_t m0, size_t m1) {
        std::copy(y.begin() + static_cast<ptrdiff_t>(m0 * ldy), y.begin() + static_cast<ptrdiff_t>(m1 * ldy),
                  snapshot.begin() + static_cast<ptrdiff_t>(m0 * ldy));
        for (size_t m = m0; m < m1; ++m) {
          reported[m]++;
          for (size_t n = 0; n < N; ++n)
            if (tiled[m * N + n].load() != 1) row_before_its_tiles++;
        }
      };
      apply(y.data(), ldy, x.data(), packed, bias.data(), M, roberta::kernels::Activation::kGelu, &done, &tiles);
      EXPECT_EQ(odd_c0.load(), 0) << "a tile started at an odd column";
      EXPECT_EQ(row_before_its_tiles.load(), 0) << "rows_done came before every tile of its row was done";
      for (size_t m = 0; m < M; ++m) {
        ASSERT_EQ(reported[m].load(), 1) << "row " << m;
        for (size_t n = 0; n < N; ++n) {
          ASSERT_EQ(tiled[m * N + n].load(), 1) << "element " << m << "," << n << " in tiles_done";
          ASSERT_EQ(snapshot[m * ldy + n], y[m * ldy + n]) << "at " << m << "," << n;
          ASSERT_EQ(tile_snapshot[m * ldy + n], y[m * ldy + n]) << "tile at " << m << "," << n;
        }
      }
    }
}
