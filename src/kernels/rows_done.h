#pragma once
// What a product does with whole rows of its output once they are finished, while they are still
// in cache: e.g. the residual add and LayerNorm after an attention or feed-forward output.
#include <cstddef>
#include <functional>

namespace roberta::kernels {

// Works on rows [m0, m1) of a product's y; each row is in exactly one call, the calls come from
// any of the pool's threads, and a row's call comes after the row is final (bias, activation). Not
// called for a product with no rows or no columns.
using RowsDone = std::function<void(size_t m0, size_t m1)>;

}  // namespace roberta::kernels
