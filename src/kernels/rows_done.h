#pragma once
// What a product does with its output once parts of it are finished, while they are still in
// cache: e.g. the residual add and LayerNorm after an attention or feed-forward output (whole
// rows), or rounding act(intermediate) to bf16 for the next product (tiles); and where a
// product writes bf16 output (ColumnGroups).
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

// Where packed_linear_to_bf16 puts its columns: width 0, all in one (M, N) matrix of row stride
// ldp pairs; else in groups of `width` columns (a multiple of 64 dividing N), group g an
// (M, width) matrix of row stride ldp pairs at out + g · stride pairs. (Q, K and V go to the
// AMX attention so, one (T, 64) matrix per part and head, rows 128 bytes apart.)
struct ColumnGroups {
  size_t width = 0, stride = 0;
};
// The first pair of row r, column c (even) of such an output.
inline size_t group_offset(const ColumnGroups& g, size_t ldp, size_t r, size_t c) {
  return g.width ? (c / g.width) * g.stride + r * ldp + (c % g.width) / 2 : r * ldp + c / 2;
}
// Throws roberta::Error (naming `who`) where g cannot split n columns.
void check_column_groups(const ColumnGroups& g, size_t n, const char* who);

}  // namespace roberta::kernels
