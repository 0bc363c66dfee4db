#pragma once
// The engine's product y (M, N) = act(x (M, K) · Wᵀ + bias) through oneDNN's matmul (Debian's
// libdnnl), in fp32, bf16 or int8, with the same rounding as our own kernels:
// - bf16: x and W rounded to bf16 (nearest even) by our code, products summed in fp32;
// - int8: W per output channel and x per row, symmetric, as packed_gemm_int8.h describes (x offset
//   by 128 to unsigned bytes, the offset removed in our epilogue).
//
// Why: on some CPUs oneDNN's brgemm kernels are faster than ours on bf16 (the choice per CPU model:
// runtime/cpu.h; docs/performance.md#figures-behind-the-code), and on CPUs with AMX it runs
// bf16 and int8 on the AMX tiles (where our own AMX kernels are the faster ones, the plan keeps them).
//
// How: W is split into parts of kPartColumns output columns, each packed once at load in the layout
// oneDNN's matmul picks on this CPU, the full parts one after the other in one buffer. A call splits
// y into (group of consecutive parts x band of rows) tasks over the engine's thread pool: where
// oneDNN's layout keeps the columns outermost (checked on its layout description), consecutive
// parts are one valid packed matrix, so a task can take several of them in one call: about one task
// per thread on few rows, where the cost per call matters (a 16-token sentence: 2 calls per product
// on 2 threads instead of 6-24), more on many rows. Each task runs one single-threaded oneDNN matmul
// into a dense per-thread tile (oneDNN's fast kernels need a dense output), then our epilogue adds
// the bias (dequantizes int8), applies the activation and writes the tile into y while it is in
// cache. oneDNN's own OpenMP threads are never used: the engine's threads run it with one OpenMP
// thread each, because two thread pools spinning on the same cores slow each other down severely
// (docs/performance.md#figures-behind-the-code).
//
// Which products go through oneDNN: use_onednn() (ROBERTA_GEMM=own|onednn overrides).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "activation.h"
#include "packed_gemm.h"
#include "packed_gemm_int8.h"
#include "rows_done.h"
#include "runtime/plan.h"

namespace roberta::kernels {

enum class Precision { kF32, kBF16, kInt8 };

// Whether this build links oneDNN.
bool onednn_built();
// Whether products of precision p go through oneDNN here: never with ROBERTA_GEMM=own, or where
// oneDNN cannot do p correctly (onednn_supports); with ROBERTA_GEMM=onednn, always otherwise (an
// error in a build without oneDNN); else the default: in a build with oneDNN and without a
// ROBERTA_ISA cap (the caps test our own lower paths), bf16 where the CPU model's row says so
// (runtime/cpu.h) and oneDNN multiplies it natively without AMX (AVX512-BF16), int8 and fp32 never.
// As `plan` says, or this process's plan.
bool use_onednn(Precision p, const runtime::KernelPlan& plan);
bool use_onednn(Precision p);
// Whether oneDNN computes products of precision p correctly on this CPU (always false in a build
// without it): fp32 always; bf16 from AVX-512 up (it has no bf16 matmul below); int8 only with
// VNNI (AVX512-VNNI, AVX-VNNI or AMX): without it, u8 x s8 pairs are summed in 16 bits and saturate
// on our inputs. (DNNL_MAX_CPU_ISA lowers what oneDNN uses, and so what it supports here.)
bool onednn_supports(Precision p);
// Whether the CPU has AMX tiles for products of precision p (bf16: AMX-BF16, int8: AMX-INT8).
bool cpu_has_amx(Precision p);
// oneDNN's instruction set on this CPU ("avx512_core_amx", "avx512_core_bf16", ...), or "" in a
// build without oneDNN.
std::string onednn_isa();

class OneDnnWeight {
 public:
  static constexpr size_t kPartColumns = 128;

  OneDnnWeight() = default;
  // w is (n, k) row-major. Throws roberta::Error in a build without oneDNN, or where
  // !onednn_supports(precision).
  OneDnnWeight(const float* w, size_t n, size_t k, Precision precision);

  size_t n() const { return n_; }
  size_t k() const { return k_; }
  Precision precision() const { return precision_; }
  size_t bytes() const;
  // The weight (n, k) as the product sees it (bf16-rounded, or q[n][k] · scale[n] for int8), read
  // back from oneDNN's packed layout: for tests.
  std::vector<float> dequantized() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  size_t n_ = 0, k_ = 0;
  Precision precision_ = Precision::kF32;
  std::shared_ptr<const Impl> impl_;
};

// y (M, N) with row stride ldy = act(x (M, K) · Wᵀ (+ bias[N] when bias is not null)); rows_done
// and tiles_done as for packed_linear in packed_gemm.h (inside the tasks on the whole-row path,
// where the tiles are rows).
void packed_linear(float* y, size_t ldy, const float* x, const OneDnnWeight& w, const float* bias, size_t M,
                   Activation act = Activation::kLinear, const RowsDone* rows_done = nullptr,
                   const TilesDone* tiles_done = nullptr);
// The same from x already quantized by quantize_rows (packed_gemm_int8.h); int8 weights only.
void packed_linear(float* y, size_t ldy, const QuantizedRows& x, const OneDnnWeight& w, const float* bias, size_t M,
                   Activation act = Activation::kLinear, const RowsDone* rows_done = nullptr,
                   const TilesDone* tiles_done = nullptr);
// The same from x already rounded to bf16 by to_bf16_pairs (packed_gemm.h); bf16 weights only.
void packed_linear(float* y, size_t ldy, const Bf16Rows& x, const OneDnnWeight& w, const float* bias, size_t M,
                   Activation act = Activation::kLinear, const RowsDone* rows_done = nullptr,
                   const TilesDone* tiles_done = nullptr);

// The implementation oneDNN picked for a band of `rows` rows of this weight's first part (e.g.
// "brg:avx512_core_bf16"), for tests and `roberta info`.
std::string onednn_implementation(const OneDnnWeight& w, size_t rows);

}  // namespace roberta::kernels
