#pragma once
// A GEMM for the engine's one shape of product, y (M, N) = x (M, K) · Wᵀ + bias, with the weight
// W (N, K) repacked once at load time into panels of 32 output columns:
//   panel p holds W[p*32 + j][k] at [p][k][j], zero-padded past N.
// The inner kernel keeps an 8 x 32 block of y in registers (AVX-512; AVX2 and portable fallbacks
// picked at run time) and reads the panel straight through, so neither operand is copied per call
// and the bias is added when the block is first written. Panels are split over the thread pool.
#include <cstddef>
#include <memory>
#include <new>

namespace roberta::kernels {

class PackedWeight {
 public:
  static constexpr size_t kPanel = 32;

  PackedWeight() = default;
  // w is (n, k) row-major.
  PackedWeight(const float* w, size_t n, size_t k);

  size_t n() const { return n_; }
  size_t k() const { return k_; }
  const float* panel(size_t p) const { return data_.get() + p * k_ * kPanel; }
  size_t panels() const { return (n_ + kPanel - 1) / kPanel; }
  size_t bytes() const { return panels() * k_ * kPanel * sizeof(float); }

 private:
  struct Free {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  size_t n_ = 0, k_ = 0;
  std::unique_ptr<float[], Free> data_;  // 64-byte aligned: one panel row is one cache line
};

// y (M, N) with row stride ldy = x (M, K) · Wᵀ (+ bias[N] when bias is not null).
void packed_linear(const float* x, size_t M, const PackedWeight& w, const float* bias, float* y, size_t ldy);

// The instruction set the kernel runs with here: "avx512", "avx2" or "portable".
const char* packed_gemm_isa();

}  // namespace roberta::kernels
