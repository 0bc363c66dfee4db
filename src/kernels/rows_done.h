#pragma once
// What a product does with its output once parts of it are finished, while they are still in
// cache: e.g. the residual add and LayerNorm after an attention or feed-forward output (whole
// rows), or rounding act(intermediate) to bf16 for the next product (tiles).
#include <cstddef>
#include <functional>

namespace roberta::kernels {

// Works on rows [m0, m1) of a product's y; each row is in exactly one call, the calls come from
// any of the pool's threads, and a row's call comes after the row is final (bias, activation). Not
// called for a product with no rows or no columns.
using RowsDone = std::function<void(size_t m0, size_t m1)>;

// Works on the tile rows [m0, m1) x columns [c0, c1) of a product's y, once final (bias,
// activation): each element of y is in exactly one call, c0 is even (tiles are whole panels, or
// whole rows), the calls come from any of the pool's threads, in no particular order, and all of
// them before any RowsDone call on the same rows.
using TilesDone = std::function<void(size_t m0, size_t m1, size_t c0, size_t c1)>;

}  // namespace roberta::kernels
