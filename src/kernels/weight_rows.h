#pragma once
// The rows of a weight (n, k) as the packers read them at load: one row-major matrix, or the rows
// of several matrices stacked without copying them (what Q, K and V packed as one product could
// use; model/packed_linear.cpp says why the model still packs them from a copy); and the
// alignment of what the packers write.
#include <cstddef>
#include <new>
#include <vector>

namespace roberta::kernels {

// The alignment of the packers' output: a cache line, so that each panel row is whole lines.
inline constexpr std::align_val_t kPackedAlignment{64};

class WeightRows {
 public:
  WeightRows(const float* w, size_t n, size_t k) : k_(k) { append(w, n); }
  explicit WeightRows(size_t k) : k_(k) {}
  // n more rows below the ones before: w (n, k) row-major.
  void append(const float* w, size_t n) {
    for (size_t i = 0; i < n; ++i) rows_.push_back(w + i * k_);
  }

  size_t n() const { return rows_.size(); }
  size_t k() const { return k_; }
  const float* row(size_t i) const { return rows_[i]; }
  // Whether rows [r0, r0 + count) follow each other in memory, as in one row-major matrix.
  bool contiguous(size_t r0, size_t count) const {
    for (size_t i = 1; i < count; ++i)
      if (rows_[r0 + i] != rows_[r0] + i * k_) return false;
    return true;
  }

 private:
  size_t k_;
  std::vector<const float*> rows_;
};

}  // namespace roberta::kernels
