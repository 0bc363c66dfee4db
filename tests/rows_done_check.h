#pragma once
// Shared by the packed GEMM and oneDNN tests: a product's rows_done sees each row of y once, and in
// its final state (activation applied).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <random>
#include <vector>

#include "kernels/activation.h"
#include "kernels/rows_done.h"

// apply(y, ldy, x, weight, bias, M, act, rows_done) runs the product; a snapshot of the rows taken
// in rows_done must equal y after the product, for few rows (rows_done after the product) and many
// (inside the tasks), dense and strided y.
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
      std::vector<float> y(M * ldy, -7.0f), snapshot(M * ldy, -9.0f);
      std::vector<std::atomic<int>> reported(M);
      const roberta::kernels::RowsDone done = [&](size_t m0, size_t m1) {
        std::copy(y.begin() + static_cast<ptrdiff_t>(m0 * ldy), y.begin() + static_cast<ptrdiff_t>(m1 * ldy),
                  snapshot.begin() + static_cast<ptrdiff_t>(m0 * ldy));
        for (size_t m = m0; m < m1; ++m) reported[m]++;
      };
      apply(y.data(), ldy, x.data(), packed, bias.data(), M, roberta::kernels::Activation::kGelu, &done);
      for (size_t m = 0; m < M; ++m) {
        ASSERT_EQ(reported[m].load(), 1) << "row " << m;
        for (size_t n = 0; n < N; ++n) ASSERT_EQ(snapshot[m * ldy + n], y[m * ldy + n]) << "at " << m << "," << n;
      }
    }
}
