#pragma once
// Internals shared by the int8 packed GEMM's files (kernels/packed_gemm_int8.h): the row scales of
// the quantizers, the register-block contract (Int8BlockFn), the Int8Kernel a CPU gets, and each
// instruction set's kernel (int8_portable.cpp, int8_avx2.cpp, int8_avx_vnni.cpp, int8_avx512.cpp,
// int8_neon.cpp).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/amx_gemm.h"
#include "kernels/gemm/built.h"
#include "kernels/packed_gemm_int8.h"

namespace roberta::kernels::int8_impl {

// A value's magnitude as bits (the sign cleared): as unsigned integers these order as the
// magnitudes do, and an infinity's (0x7F800000) and every NaN's come past all finite values'. The
// quantizers take a row's maximum so, where max on floats would pass over a NaN.
constexpr uint32_t kMagnitudeMask = 0x7FFFFFFF, kInfinityBits = 0x7F800000;
inline uint32_t magnitude_bits(float v) { return std::bit_cast<uint32_t>(v) & kMagnitudeMask; }

// The scale of a row (weights or activations) from its largest magnitude's bits: max / 127, 1 for
// an all-zero row (inv: 127 / max, at most FLT_MAX: a max below 3.7e-37 would make it infinite, and
// 0 · inf a NaN; 0 for an all-zero row); NaN for a row holding an infinity or a NaN (not finite),
// whose bytes are then all zero: every output the row takes part in is NaN, as fp32's is not
// finite there, rather than finite values made from the row's other entries.
struct RowScale {
  float scale, inv;
  bool finite;
};
// (Inlined into each caller, so it is compiled for the caller's instruction set: called out of line
// from the AVX-512 quantizers, its SSE code slows int8 forward passes down measurably;
// docs/performance.md#figures-behind-the-code.)
__attribute__((always_inline)) inline RowScale row_scale(uint32_t top) {
  if (top >= kInfinityBits) return {std::numeric_limits<float>::quiet_NaN(), 0.0f, false};
  const float amax = std::bit_cast<float>(top);
  if (amax == 0) return {1.0f, 0.0f, true};
  return {amax / 127.0f, std::min(127.0f / amax, std::numeric_limits<float>::max()), true};
}

// dst[i] for i from i0 up to k's whole quads: round(at(i) · inv) (nearest even) + 128 below k, 128
// (a zero) past it: every quantize_rows_* writes the values its vector loops leave this way.
template <class At>
void quantize_tail(const At& at, size_t i0, size_t k, float inv, uint8_t* dst) {
  for (size_t i = i0; i < (k + 3) / 4 * 4; ++i) {
    const float q = i < k ? std::clamp(std::nearbyint(at(i) * inv), -127.0f, 127.0f) : 0.0f;
    dst[i] = static_cast<uint8_t>(static_cast<int>(q) + 128);
  }
}

// One register block of the int8 product over the k quads [q0, q1): y[r][j] (+)= x_scale[r] ·
// w_scale[j] · (sum of byte products - offset[j]) (+ bias after the last slice); a kernel that
// multiplies x's signed q (AVX2, AVX512BW: vpmaddubsw) sums q · w itself and leaves offset aside.
using Int8BlockFn = void (*)(const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1,
                             const int32_t* offset, const float* x_scale, const float* w_scale, const float* bias,
                             bool first, float* y, size_t ldy, size_t cols);

constexpr size_t kMaxRows = 6;
constexpr size_t kCols = PackedWeightInt8::kPanel;

// A register block of exactly its kernel's row count (a template argument: the accumulators then
// stay in registers), the 64-column panel's columns below `cols`; register block `block` of the
// chunk's `blocks`, for its share of the panel prefetch (NextSlicePrefetch).
using Int8RowsFn = void (*)(const uint32_t* xq, size_t ldq, const int8_t* panel, size_t q0, size_t q1,
                            const int32_t* offset, const float* x_scale, const float* w_scale, const float* bias,
                            bool first, float* y, size_t ldy, size_t cols, size_t block, size_t blocks);

// Any number of rows (a row chunk) through blocks of MR rows, Full the block of MR: inlined into the
// loop where the caller is flattened, one call per chunk rather than per block (the call, 14
// arguments per 6 x 64 x 768 block, is a measurable share of the product;
// docs/performance.md#figures-behind-the-code); the last rows through by_rows[n], the block of
// exactly n rows.
template <size_t MR, Int8RowsFn Full>
__attribute__((always_inline)) inline void int8_row_blocks(const Int8RowsFn (&by_rows)[MR], const uint32_t* xq,
                                                           size_t ldq, size_t rows, const int8_t* panel, size_t q0,
                                                           size_t q1, const int32_t* offset, const float* x_scale,
                                                           const float* w_scale, const float* bias, bool first,
                                                           float* y, size_t ldy, size_t cols) {
  const size_t blocks = (rows + MR - 1) / MR;
  size_t r = 0;
  for (; r + MR <= rows; r += MR)
    Full(xq + r * ldq, ldq, panel, q0, q1, offset, x_scale + r, w_scale, bias, first, y + r * ldy, ldy, cols, r / MR,
         blocks);
  if (r < rows)
    by_rows[rows - r](xq + r * ldq, ldq, panel, q0, q1, offset, x_scale + r, w_scale, bias, first, y + r * ldy, ldy,
                      cols, r / MR, blocks);
}

void int8_block_portable(const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1,
                         const int32_t* offset, const float* x_scale, const float* w_scale, const float* bias,
                         bool first, float* y, size_t ldy, size_t cols);
// x (rows, k) -> quads (rows, (k + 3) / 4) of round(x · 127 / max) + 128, and each row's scale.
void quantize_rows_portable(const float* x, size_t rows, size_t k, uint32_t* quads, float* scale);

struct Int8Kernel {
  Int8BlockFn fn;  // (null where fused is set)
  // A product that applies GELU in its epilogue and can write bf16 (AmxInt8Fn): on AMX tiles, or
  // AVX512-VNNI's with AVX512-BF16 where the CPU model's row asks for it; null elsewhere.
  AmxInt8Fn fused;
  void (*quantize)(const float* x, size_t rows, size_t k, uint32_t* quads, float* scale);
  size_t block_rows;  // for_each_block's row blocks: the register block (VNNI), an A tile (AMX)
  const char* name;
  bool prefetches = false;  // fn asks for the panel's next k slice (NextSlicePrefetch)
};

// Each instruction set's kernel; next: its blocks ask for the panel's next k slice
// (NextSlicePrefetch), as panel_prefetch() says.
#if defined(ROBERTA_HAVE_AVX2_INT8_KERNEL)
Int8Kernel avx2_int8_kernel(bool next);
void quantize_rows_avx2(const float* x, size_t rows, size_t k, uint32_t* quads, float* scale);
#endif
#if defined(ROBERTA_HAVE_AVX_VNNI_KERNEL)
Int8Kernel avx_vnni_int8_kernel(bool next);
#endif
#if defined(__aarch64__)
// 64-bit ARM (int8_neon.cpp): with the dot product (sdot), with I8MM (smmla).
Int8Kernel sdot_int8_kernel();
Int8Kernel smmla_int8_kernel();
#endif
#if defined(ROBERTA_HAVE_VNNI_KERNEL)
Int8Kernel amx_int8_kernel();
Int8Kernel vnni_int8_kernel(bool next);
Int8Kernel vnni_fused_int8_kernel(bool next);
Int8Kernel avx512bw_int8_kernel(bool next);
void quantize_bf16_rows_avx512(const uint32_t* pairs, size_t ldp, size_t rows, size_t k, uint32_t* quads,
                               float* scale);
#endif

}  // namespace roberta::kernels::int8_impl
