// The fp32 packed GEMM (kernels/packed_gemm.h): packing, the choice of kernel, the entry point.
#include "kernels/packed_gemm.h"

#include "kernels/intrinsics.h"

#include <algorithm>
#include <cstring>

#include "kernels/gemm/fp32_blocks.h"
#include "kernels/avx2_math.h"
#include "kernels/isa.h"
#include "runtime/plan.h"
#include "util/thread_pool.h"

namespace roberta::kernels {

namespace {
// dst[kk * ldd + j] = src[j * lds + kk] for rows j < rows, kk in [k0, k1).
void transpose_scalar(const float* src, size_t lds, size_t rows, size_t k0, size_t k1, float* dst, size_t ldd) {
  for (size_t j = 0; j < rows; ++j)
    for (size_t kk = k0; kk < k1; ++kk) dst[kk * ldd + j] = src[j * lds + kk];
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
// The same, 8 x 8 blocks at a time through registers; the edges as transpose_scalar does them.
__attribute__((target("avx2"))) void transpose_avx2(const float* src, size_t lds, size_t rows, size_t k0, size_t k1,
                                                    float* dst, size_t ldd) {
  const size_t full_rows = rows / 8 * 8, k8 = k0 + (k1 - k0) / 8 * 8;
  for (size_t j = 0; j < full_rows; j += 8) {
    const float* s = src + j * lds;
    for (size_t kk = k0; kk < k8; kk += 8) {
      __m256 r[8];
      for (size_t i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(s + i * lds + kk);
      transpose8(r);
      float* d = dst + kk * ldd + j;
      for (size_t c = 0; c < 8; ++c) _mm256_storeu_ps(d + c * ldd, r[c]);
    }
    transpose_scalar(s, lds, 8, k8, k1, dst + j, ldd);
  }
  transpose_scalar(src + full_rows * lds, lds, rows - full_rows, k0, k1, dst + full_rows, ldd);
}
#endif
}  // namespace

PackedWeight::PackedWeight(const float* w, size_t n, size_t k)
    : n_(n), k_(k), data_(static_cast<float*>(::operator new[](bytes(), std::align_val_t(64)))) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
  const auto transpose = usable_isa() >= Isa::kAvx2 ? transpose_avx2 : transpose_scalar;
#else
  const auto transpose = transpose_scalar;
#endif
  // Panels are independent: pack them on the thread pool. Within a panel, walk k in tiles so
  // that both the 32 source rows and the destination stay in cache.
  ThreadPool::global()->parallel_for(panels(), [&](size_t p) {
    float* dst = data_.get() + p * k * kPanel;
    const size_t rows = std::min(kPanel, n - p * kPanel);
    if (rows < kPanel) std::memset(dst, 0, k * kPanel * sizeof(float));
    for (size_t k0 = 0; k0 < k; k0 += 64) transpose(w + p * kPanel * k, k, rows, k0, std::min(k, k0 + 64), dst, kPanel);
  });
}

namespace gemm_impl {
namespace {

// The best kernel that the CPU and ROBERTA_ISA allow (kernels/isa.h), with the block rows and
// panel prefetch of the CPU model's row (runtime/cpu.h; ROBERTA_FP32_ROWS, ROBERTA_PREFETCH).
template <typename W>
Kernel<W> pick_kernel() {
  const Isa isa = usable_isa();
#if defined(__x86_64__)
  if (isa >= Isa::kAvx512) return avx512_kernel<W>(runtime::plan().fp32_block_rows == 8, panel_prefetch());
  if (isa >= Isa::kAvx2) return avx2_kernel<W>(panel_prefetch());
#endif
#if defined(__aarch64__)
  if (isa >= Isa::kNeon) return neon_kernel<W>();
#endif
  (void)isa;
  const auto fn = over_blocks<float, W, block_portable<W>, 8>;
  return {fn, 8, "portable", fn, 8, 0};
}

}  // namespace

template <typename W>
const Kernel<W>& kernel() {
  static const Kernel<W> k = pick_kernel<W>();
  return k;
}
template const Kernel<float>& kernel<float>();
template const Kernel<uint16_t>& kernel<uint16_t>();

}  // namespace gemm_impl

using gemm_impl::kernel;

const char* packed_gemm_isa() { return kernel().isa; }

const char* packed_gemm_prefetch() {
#if defined(__x86_64__)
  if (usable_isa() >= Isa::kAvx2) return panel_prefetch() == Prefetch::kNextSlice ? "next" : "ahead";
#endif
  return "none";
}

size_t packed_gemm_block_rows() { return kernel().rows; }

void packed_linear(float* y, size_t ldy, const float* x, const PackedWeight& w, const float* bias, size_t M,
                   Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  gemm_impl::packed_linear_steps(kernel(), y, ldy, x, w.k(), w, w.k(), gemm_impl::kMaxDepth, bias, M, act, rows_done,
                                 tiles_done);
}

}  // namespace roberta::kernels
