#pragma once
// Rows of several random matrices stacked in place, as the model stacks Q, K and V at load, and
// their contiguous copy: the packers must pack the two alike.
#include <cstddef>
#include <initializer_list>
#include <random>
#include <vector>

#include "kernels/weight_rows.h"

namespace roberta::test {

struct StackedRows {
  std::vector<std::vector<float>> parts;  // each (n_i, k) in a buffer of its own, N(0, 1)
  kernels::WeightRows stacked;
  std::vector<float> copy;  // the same rows, one after the other

  StackedRows(std::initializer_list<size_t> sizes, size_t k, unsigned seed) : stacked(k) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (size_t n : sizes) {
      parts.emplace_back(n * k + 5);  // 5 more: the next part does not start where this one ends
      for (auto& v : parts.back()) v = dist(rng);
      stacked.append(parts.back().data(), n);
      copy.insert(copy.end(), parts.back().begin(), parts.back().begin() + static_cast<std::ptrdiff_t>(n * k));
    }
  }
};

}  // namespace roberta::test
