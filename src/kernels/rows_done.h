#pragma once
// What a product does with whole rows of its output once they are finished, while they are still
// in cache: e.g. the residual add and LayerNorm after an attention or feed-forward output.
#include <cstddef>
#include <functional>

namespace roberta::kernels {

// Works on rows [m0, m1) of a product's y; called once per row, from any of the pool's threads,
// on disjoint row ranges.
using RowsDone = std::function<void(size_t m0, size_t m1)>;

}  // namespace roberta::kernels
