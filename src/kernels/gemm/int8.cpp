// The int8 packed GEMM (kernels/packed_gemm_int8.h): which kernel runs it here, the entry points,
// and the products that write bf16.
#include "kernels/packed_gemm_int8.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/activations.h"
#include "kernels/block_loop.h"
#include "kernels/gemm/int8_blocks.h"
#include "kernels/isa.h"
#include "kernels/packed_gemm.h"
#include "roberta/error.h"
#include "runtime/plan.h"
#include "util/scratch.h"
#include "util/thread_pool.h"
#if defined(__x86_64__)
#include "kernels/panel_prefetch.h"
#endif

namespace roberta::kernels {
using namespace int8_impl;

namespace {

// The kernels below AMX prefetch the panel's next k slice where panel_prefetch() says kNextSlice,
// in products of any size (docs/performance.md). (Asked only where it applies, as the fp32 kernel
// asks: a bad ROBERTA_PREFETCH is then an error where it would decide something, not on AMX or the
// portable loop.)
Int8Kernel pick_int8_kernel() {
#if defined(__x86_64__)
  [[maybe_unused]] const auto next = [] { return panel_prefetch() == Prefetch::kNextSlice; };
#endif
#if defined(ROBERTA_HAVE_VNNI_KERNEL)
  if (usable_isa() >= Isa::kAmx) return amx_int8_kernel();
  if (runtime::plan().int8_fused_epilogue) return vnni_fused_int8_kernel(next());
  if (usable_isa() >= Isa::kAvx512Vnni) return vnni_int8_kernel(next());
  // (No CPU has AVX-512 without AVX512-VNNI but with AVX-VNNI: ROBERTA_ISA=avx512 stands for the
  // AVX-512 CPUs from before AVX512-VNNI. A build without these GCC-only kernels takes AVX-VNNI
  // below, where the CPU has it, even there.)
  if (usable_isa() >= Isa::kAvx512) return avx512bw_int8_kernel(next());
#endif
#if defined(ROBERTA_HAVE_AVX_VNNI_KERNEL)
  if (avx_vnni_usable()) return avx_vnni_int8_kernel(next());
#endif
#if defined(ROBERTA_HAVE_AVX2_INT8_KERNEL)
  if (usable_isa() >= Isa::kAvx2) return avx2_int8_kernel(next());
#endif
#if defined(__aarch64__)
  if (usable_isa() >= Isa::kI8mm) return smmla_int8_kernel();
  if (usable_isa() >= Isa::kDotProd) return sdot_int8_kernel();
#endif
  return {int8_block_portable, nullptr, quantize_rows_portable, kMaxRows, "portable"};
}

const Int8Kernel& int8_kernel() {
  static const Int8Kernel k = pick_int8_kernel();
  return k;
}

}  // namespace

bool has_vnni_instructions() {
#if defined(ROBERTA_HAVE_VNNI_KERNEL)
  return usable_isa() >= Isa::kAvx512Vnni;
#else
  return false;
#endif
}

bool avx512_int8_kernels_built() {
#if defined(ROBERTA_HAVE_VNNI_KERNEL)
  return true;
#else
  return false;
#endif
}

bool avx_vnni_kernel_built() {
#if defined(ROBERTA_HAVE_AVX_VNNI_KERNEL)
  return true;
#else
  return false;
#endif
}

const char* int8_kernel_name() { return int8_kernel().name; }

bool int8_kernel_prefetches() { return int8_kernel().prefetches; }

bool int8_kernel_fuses_epilogue() { return int8_kernel().fused != nullptr; }

void quantize_rows(const float* x, size_t rows, size_t k, uint32_t* quads, float* scale) {
  int8_kernel().quantize(x, rows, k, quads, scale);
}

void packed_linear(float* y, size_t ldy, const float* x, const PackedWeightInt8& w, const float* bias, size_t M,
                   Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  const size_t K = w.k(), N = w.n(), Q = w.k_quads();
  if (M == 0 || N == 0) return;
  const Int8Kernel& kern = int8_kernel();
  // x quantized once per call (rows split over the pool when there are many): quads and scales.
  thread_local std::vector<uint32_t> xq_buffer;
  thread_local std::vector<float> xs_buffer;
  const util::Scratch<uint32_t> xq(xq_buffer, M * Q);
  const util::Scratch<float> xs(xs_buffer, M);
  uint32_t* xp = xq.data();
  float* sp = xs.data();
  constexpr size_t kConvertRows = 64;
  ThreadPool::global()->parallel_for((M + kConvertRows - 1) / kConvertRows, [&](size_t t) {
    const size_t m0 = t * kConvertRows, rows = std::min(kConvertRows, M - m0);
    kern.quantize(x + m0 * K, rows, K, xp + m0 * Q, sp + m0);
  });
  packed_linear(y, ldy, QuantizedRows{xp, sp}, w, bias, M, act, rows_done, tiles_done);
}

namespace {
// `fn` or `fused` (the other null): the fused product applies GELU itself, on the last k slice.
void packed_linear_with(const Int8BlockFn fn, const AmxInt8Fn fused, size_t block_rows, float* y, size_t ldy,
                        const QuantizedRows& x, const PackedWeightInt8& w, const float* bias, size_t M,
                        Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  const size_t N = w.n(), Q = w.k_quads();
  if (M == 0 || N == 0) return;
  const uint32_t* xp = x.quads;
  const float* sp = x.scales;
  const bool fused_gelu = fused && act == Activation::kGelu;
  for_each_block(
      M, N, Q, PackedWeightInt8::kSliceQuads, block_rows,
      [&](size_t r, size_t rows, size_t p, size_t q0, size_t q1) {
        const size_t col = p * kCols;
        const int32_t* offsets = w.offsets(q0 / PackedWeightInt8::kSliceQuads, p);
        const float* b = bias && q1 == Q ? bias + col : nullptr;
        if (fused)
          fused(xp + r * Q, Q, rows, w.panel(p), q0, q1, offsets, sp + r, w.scales() + col, b, q0 == 0, y + r * ldy + col,
              ldy, std::min(kCols, N - col), fused_gelu && q1 == Q, nullptr,
              p + 1 < w.panels() ? w.panel(p + 1) : nullptr);
        else
          fn(xp + r * Q, Q, rows, w.panel(p), q0, q1, offsets, sp + r, w.scales() + col, b, q0 == 0, y + r * ldy + col,
             ldy, std::min(kCols, N - col));
      },
      [&](size_t m0, size_t m1, size_t c0, size_t c1) {
        if (act != Activation::kLinear && !fused_gelu) activation_rows(y + m0 * ldy + c0, ldy, m1 - m0, c1 - c0, act);
        if (tiles_done) (*tiles_done)(m0, m1, c0, c1);
      },
      kCols, rows_done);
}
}  // namespace

void packed_linear(float* y, size_t ldy, const QuantizedRows& x, const PackedWeightInt8& w, const float* bias,
                   size_t M, Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  const Int8Kernel& kern = int8_kernel();
  packed_linear_with(kern.fn, kern.fused, kern.block_rows, y, ldy, x, w, bias, M, act, rows_done, tiles_done);
}

namespace {
bool bf16_output_shape(const PackedWeightInt8& w, Activation act) {
  return w.n() % 2 == 0 && w.k_quads() <= PackedWeightInt8::kSliceQuads &&
         (act == Activation::kLinear || act == Activation::kGelu);
}

void packed_linear_to_bf16_with(AmxInt8Fn fused, size_t block_rows, uint32_t* out, size_t ldp,
                                const QuantizedRows& x, const PackedWeightInt8& w, const float* bias, size_t M,
                                Activation act, const ColumnGroups& groups) {
  const size_t N = w.n(), Q = w.k_quads();
  if (M == 0 || N == 0) return;
  for_each_block(
      M, N, Q, Q, block_rows,
      [&](size_t r, size_t rows, size_t p, size_t, size_t) {
        const size_t col = p * kCols;  // (a panel lies within a group)
        fused(x.quads + r * Q, Q, rows, w.panel(p), 0, Q, w.offsets(0, p), x.scales + r, w.scales() + col,
            bias ? bias + col : nullptr, true, nullptr, 2 * ldp, std::min(kCols, N - col), act == Activation::kGelu,
            reinterpret_cast<uint16_t*>(out + group_offset(groups, ldp, r, col)),
            p + 1 < w.panels() ? w.panel(p + 1) : nullptr);
      },
      [](size_t, size_t, size_t, size_t) {}, kCols);
}

void check_bf16_output(const PackedWeightInt8& w, Activation act, const char* who) {
  if (!bf16_output_shape(w, act) || !has_bf16_instructions())
    throw Error(std::string(who) + ": needs AVX512-BF16, an even output size, K <= " +
                std::to_string(4 * PackedWeightInt8::kSliceQuads) + " and a linear or GELU activation");
}

// The bf16 values widened to fp32, one row at a time, through quantize_rows_portable.
[[maybe_unused]] void quantize_bf16_rows_portable(const uint32_t* pairs, size_t ldp, size_t rows, size_t k,
                                                  uint32_t* quads, float* scale) {
  const size_t Q = (k + 3) / 4;
  std::vector<float> row(k);
  for (size_t m = 0; m < rows; ++m) {
    const auto* src = reinterpret_cast<const uint16_t*>(pairs + m * ldp);
    for (size_t i = 0; i < k; ++i) {
      const uint32_t bits = uint32_t{src[i]} << 16;
      std::memcpy(&row[i], &bits, 4);
    }
    quantize_rows_portable(row.data(), 1, k, quads + m * Q, scale + m);
  }
}
}  // namespace

bool writes_bf16_output(const PackedWeightInt8& w, Activation act) {
  return int8_kernel().fused && has_bf16_instructions() && bf16_output_shape(w, act);
}

void packed_linear_to_bf16(uint32_t* out, size_t ldp, const QuantizedRows& x, const PackedWeightInt8& w,
                           const float* bias, size_t M, Activation act, const ColumnGroups& groups) {
  const Int8Kernel& kern = int8_kernel();
  if (!kern.fused) throw Error("packed_linear_to_bf16: the int8 product here does not write bf16 (writes_bf16_output)");
  check_bf16_output(w, act, "packed_linear_to_bf16");
  check_column_groups(groups, w.n(), "packed_linear_to_bf16");
  packed_linear_to_bf16_with(kern.fused, kern.block_rows, out, ldp, x, w, bias, M, act, groups);
}

void packed_linear_to_bf16_amx_with(AmxInt8Fn block, uint32_t* out, size_t ldp, const QuantizedRows& x,
                                    const PackedWeightInt8& w, const float* bias, size_t M, Activation act,
                                    const ColumnGroups& groups) {
  check_bf16_output(w, act, "packed_linear_to_bf16_amx_with");
  check_column_groups(groups, w.n(), "packed_linear_to_bf16_amx_with");
  packed_linear_to_bf16_with(block, kAmxBlockRows, out, ldp, x, w, bias, M, act, groups);
}

void quantize_bf16_rows(const uint32_t* pairs, size_t ldp, size_t rows, size_t k, uint32_t* quads, float* scale) {
#if defined(ROBERTA_HAVE_VNNI_KERNEL)
  static const bool avx512 = usable_isa() >= Isa::kAvx512;
  if (avx512) return quantize_bf16_rows_avx512(pairs, ldp, rows, k, quads, scale);
#endif
  quantize_bf16_rows_portable(pairs, ldp, rows, k, quads, scale);
}

void packed_linear_amx_with(AmxInt8Fn block, float* y, size_t ldy, const QuantizedRows& x, const PackedWeightInt8& w,
                            const float* bias, size_t M, Activation act) {
  packed_linear_with(nullptr, block, kAmxBlockRows, y, ldy, x, w, bias, M, act, nullptr, nullptr);
}

}  // namespace roberta::kernels
