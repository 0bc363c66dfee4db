// The products through oneDNN's matmul (kernels/onednn_gemm.h): x converted to the weight's
// precision, bands of rows over the thread pool, each band a matmul per weight part, and our own
// epilogue (dequantization, bias, activation) on each tile while it is in cache.
#include "kernels/onednn_gemm.h"

#if defined(ROBERTA_WITH_ONEDNN)
#include "kernels/intrinsics.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/activations.h"
#include "kernels/block_loop.h"
#include "kernels/isa.h"
#include "kernels/gemm/onednn_parts.h"
#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"
#include "roberta/error.h"
#include "util/scratch.h"
#include "util/thread_pool.h"

namespace roberta::kernels {
using namespace onednn_impl;

namespace {

// y (rows, cols) = tile + bias (bias may be null); tile is dense (rows, cols).
void add_bias_portable(float* y, size_t ldy, const float* tile, const float* bias, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float* t = tile + r * cols;
    float* out = y + r * ldy;
    if (bias)
      for (size_t c = 0; c < cols; ++c) out[c] = t[c] + bias[c];
    else
      std::memcpy(out, t, cols * sizeof(float));
  }
}

// The same in AVX-512 (the portable loop, vectorised for SSE2 only, is a visible share of a bf16
// forward pass: docs/performance.md#figures-behind-the-code).
__attribute__((target("avx512f"))) void add_bias_avx512(float* y, size_t ldy, const float* tile, const float* bias,
                                                        size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float* t = tile + r * cols;
    float* out = y + r * ldy;
    for (size_t c = 0; c < cols; c += 16) {
      const __mmask16 m = cols - c >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (cols - c)) - 1);
      const __m512 v = _mm512_maskz_loadu_ps(m, t + c);
      _mm512_mask_storeu_ps(out + c, m, bias ? _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + c)) : v);
    }
  }
}

// y = x_scale[r] · w_scale[c] · (acc - offset[c]) + bias[c], as our int8 kernel's epilogue computes it.
void dequantize_portable(float* y, size_t ldy, const int32_t* acc, const int32_t* offset, const float* x_scale,
                         const float* w_scale, const float* bias, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) {
      const float v = static_cast<float>(acc[r * cols + c] - offset[c]) * (x_scale[r] * w_scale[c]);
      y[r * ldy + c] = bias ? v + bias[c] : v;
    }
}

__attribute__((target("avx512f"))) void dequantize_avx512(float* y, size_t ldy, const int32_t* acc,
                                                          const int32_t* offset, const float* x_scale,
                                                          const float* w_scale, const float* bias, size_t rows,
                                                          size_t cols) {
  const size_t full = cols / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (cols - full)) - 1);
  for (size_t r = 0; r < rows; ++r) {
    const __m512 xs = _mm512_set1_ps(x_scale[r]);
    const int32_t* a = acc + r * cols;
    float* out = y + r * ldy;
    size_t c = 0;
    for (; c < full; c += 16) {
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_loadu_si512(a + c), _mm512_loadu_si512(offset + c))),
                               _mm512_mul_ps(xs, _mm512_loadu_ps(w_scale + c)));
      if (bias) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + c));
      _mm512_storeu_ps(out + c, v);
    }
    if (tail) {
      __m512 v = _mm512_mul_ps(
          _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_maskz_loadu_epi32(tail, a + c), _mm512_maskz_loadu_epi32(tail, offset + c))),
          _mm512_mul_ps(xs, _mm512_maskz_loadu_ps(tail, w_scale + c)));
      if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(tail, bias + c));
      _mm512_mask_storeu_ps(out + c, tail, v);
    }
  }
}



// One oneDNN matmul on this thread: dst (rows, cols) = src · weights (+ bias where the primitive
// adds one), src and dst dense at the primitive's strides, with this thread's scratchpad.
void run_matmul(const Primitive& prim, const void* src, const void* weights, void* dst, const float* bias) {
  thread_local std::vector<char> scratch_buffer;
  const util::Scratch<char> scratch(scratch_buffer, prim.scratchpad.get_size());
  const dnnl::engine& engine = cpu_engine();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(prim.src, engine, const_cast<void*>(src))},
                                       {DNNL_ARG_WEIGHTS, memory(prim.weights, engine, const_cast<void*>(weights))},
                                       {DNNL_ARG_DST, memory(prim.dst, engine, dst)},
                                       {DNNL_ARG_SCRATCHPAD, memory(prim.scratchpad, engine, scratch.data())}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(prim.bias, engine, const_cast<float*>(bias)));
  prim.matmul.execute(thread_stream(), args);
}

// Rows per thread from which packed_linear gives each task whole rows of y (whole_rows_product).
constexpr size_t kMinRowsPerThread = 64;

// y (M, N), dense (ldy = N), as tasks of whole rows: each band of rows times the whole weight,
// written by oneDNN straight into y, with the bias added by oneDNN (fp32, bf16) or the int8 sums
// dequantized in place; no tile and no copy (the copy from the tile is a visible share of a bf16
// forward pass: docs/performance.md#figures-behind-the-code). The band count is a multiple of the
// thread count, bands have at most kBandRows rows. x is already converted (xc, xs) unless fp32.
// Returns false, having done nothing, where oneDNN's layout does not let one call take all the
// parts. The activation and tiles_done (may be null) go over a band a few rows at a time (tiles of
// whole rows), while they are in L1; rows_done (may be null) runs on each band once it is final.
bool whole_rows_product(float* y, const float* x, const OneDnnWeight& w, const float* bias, size_t M, Activation act,
                        const uint32_t* xc, const float* xs, const RowsDone* rows_done, const TilesDone* tiles_done) {
  const size_t N = w.n(), K = w.k();
  const Precision p = w.precision();
  const OneDnnWeight::Impl& impl = w.impl();
  const std::shared_ptr<ThreadPool> pool_ref = ThreadPool::global();
  ThreadPool& pool = *pool_ref;
  const size_t threads = pool.num_threads(), ldx = source_stride(p, K);
  size_t bands = (M + kBandRows - 1) / kBandRows;
  bands = (bands + threads - 1) / threads * threads;
  const bool fused_bias = bias && p != Precision::kInt8;
  single_threaded_onednn();
  if (!primitive(p, (M + bands - 1) / bands, N, K, ldx, fused_bias).joins_parts) return false;
  const char* source = p == Precision::kF32 ? reinterpret_cast<const char*>(x) : reinterpret_cast<const char*>(xc);
  const size_t source_row_bytes = ldx * memory::data_type_size(source_type(p));
  pool.parallel_for(bands, [&](size_t band) {
    const size_t m0 = M * band / bands, rows = M * (band + 1) / bands - m0;
    single_threaded_onednn();
    const Primitive& prim = primitive(p, rows, N, K, ldx, fused_bias);
    float* out = y + m0 * N;
    run_matmul(prim, source + m0 * source_row_bytes, impl.parts[0].get_data_handle(), out,
               fused_bias ? bias : nullptr);
    if (p == Precision::kInt8)  // the int32 sums become floats in place, element by element
      dequantize_avx512(out, N, reinterpret_cast<const int32_t*>(out), impl.offsets.data(), xs + m0,
                        impl.scales.data(), bias, rows, N);
    if (act != Activation::kLinear || tiles_done) {
      const size_t step = std::max<size_t>(1, 8192 / N);  // rows of ~32 KB
      for (size_t r0 = 0; r0 < rows; r0 += step) {
        const size_t r1 = std::min(rows, r0 + step);
        if (act != Activation::kLinear) activation_rows(out + r0 * N, N, r1 - r0, N, act);
        if (tiles_done) (*tiles_done)(m0 + r0, m0 + r1, 0, N);
      }
    }
    if (rows_done) (*rows_done)(m0, m0 + rows);
  });
  return true;
}



// y = act(product + bias) from x in the product's precision: x itself (fp32), or xc: bf16 pairs
// (M, ldx / 2) or int8 quads (M, ldx / 4) with per-row scales xs.
void product(float* y, size_t ldy, const float* x, const uint32_t* xc, const float* xs, const OneDnnWeight& w,
             const float* bias, size_t M, Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  const size_t N = w.n(), K = w.k();
  const Precision p = w.precision();
  const OneDnnWeight::Impl& impl = w.impl();
  const size_t ldx = source_stride(p, K);
  const std::shared_ptr<ThreadPool> pool_ref = ThreadPool::global();
  ThreadPool& pool = *pool_ref;
  const char* source = p == Precision::kF32 ? reinterpret_cast<const char*>(x) : reinterpret_cast<const char*>(xc);
  const size_t source_row_bytes = ldx * memory::data_type_size(source_type(p));
  const size_t threads = pool.num_threads();
  const bool avx512 = usable_isa() >= Isa::kAvx512;
  if (ldy == N && N % OneDnnWeight::kPartColumns == 0 && M >= kMinRowsPerThread * threads &&
      (p != Precision::kInt8 || avx512) && whole_rows_product(y, x, w, bias, M, act, xc, xs, rows_done, tiles_done))
    return;
  const size_t bands = (M + kBandRows - 1) / kBandRows, band_rows = (M + bands - 1) / bands;
  // Consecutive full parts are taken together, `group` at a time, where oneDNN's layout allows it
  // (Primitive::joins_parts): fewer, wider calls cost less per call, which matters on few rows (a
  // 16-token sentence: one call per thread rather than one per 128 columns). About one task per
  // thread on one band, four on several; a task's tile stays within ~512 KB.
  const size_t full_parts = N / OneDnnWeight::kPartColumns;
  const size_t tail = N % OneDnnWeight::kPartColumns ? 1 : 0;
  size_t group = 1;
  if (full_parts > 1) {
    const size_t tasks_wanted = bands == 1 ? threads : 4 * threads;
    const size_t widest = std::max<size_t>(1, (size_t{512} << 10) / (band_rows * OneDnnWeight::kPartColumns * 4));
    size_t groups = std::max((tasks_wanted + bands - 1) / bands, (full_parts + widest - 1) / widest);
    groups = std::min(full_parts, (groups + threads - 1) / threads * threads);
    group = (full_parts + groups - 1) / groups;
    if (group > 1) {
      single_threaded_onednn();
      if (!primitive(p, band_rows, group * OneDnnWeight::kPartColumns, K, ldx).joins_parts) group = 1;
    }
  }
  const size_t groups = (full_parts + group - 1) / group + tail;
  pool.parallel_for(groups * bands, [&](size_t t) {
    const size_t g = t / bands, band = t % bands;
    const size_t m0 = M * band / bands, rows = M * (band + 1) / bands - m0;
    const size_t first = g * group, c0 = first * OneDnnWeight::kPartColumns;
    const size_t cols = first < full_parts ? std::min(group, full_parts - first) * OneDnnWeight::kPartColumns : N - c0;
    single_threaded_onednn();
    const Primitive& prim = primitive(p, rows, cols, K, ldx);
    thread_local std::vector<float> tile_buffer;  // int32 or float, 4 bytes each
    const util::Scratch<float> tile(tile_buffer, rows * cols);
    run_matmul(prim, source + m0 * source_row_bytes, impl.parts[first].get_data_handle(), tile.data(), nullptr);
    float* out = y + m0 * ldy + c0;
    const float* b = bias ? bias + c0 : nullptr;
    if (p == Precision::kInt8) {
      const auto* acc = reinterpret_cast<const int32_t*>(tile.data());
      (avx512 ? dequantize_avx512 : dequantize_portable)(out, ldy, acc, impl.offsets.data() + c0, xs + m0,
                                                         impl.scales.data() + c0, b, rows, cols);
    } else {
      (avx512 ? add_bias_avx512 : add_bias_portable)(out, ldy, tile.data(), b, rows, cols);
    }
    if (act != Activation::kLinear) activation_rows(out, ldy, rows, cols, act);
    if (tiles_done) (*tiles_done)(m0, m0 + rows, c0, c0 + cols);
  });
  if (rows_done) rows_done_after(M, N, *rows_done);
}

}  // namespace

void packed_linear(float* y, size_t ldy, const float* x, const OneDnnWeight& w, const float* bias, size_t M,
                   Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  const size_t N = w.n(), K = w.k();
  if (M == 0 || N == 0) return;
  const Precision p = w.precision();
  // x in the product's precision, once per call: bf16 pairs or int8 quads (+ per-row scales).
  thread_local std::vector<uint32_t> converted_buffer;
  thread_local std::vector<float> scale_buffer;
  const size_t ldx = source_stride(p, K);
  const util::Scratch<uint32_t> converted(converted_buffer,
                                          p == Precision::kF32 ? 0 : M * ldx / (p == Precision::kInt8 ? 4 : 2));
  const util::Scratch<float> scales(scale_buffer, p == Precision::kInt8 ? M : 0);
  uint32_t* xc = converted.data();
  float* xs = scales.data();
  if (p != Precision::kF32) {
    constexpr size_t kConvertRows = 64;
    ThreadPool::global()->parallel_for((M + kConvertRows - 1) / kConvertRows, [&](size_t t) {
      const size_t m0 = t * kConvertRows, rows = std::min(kConvertRows, M - m0);
      if (p == Precision::kBF16)
        to_bf16_pairs(x + m0 * K, rows, K, xc + m0 * ldx / 2);
      else
        quantize_rows(x + m0 * K, rows, K, xc + m0 * ldx / 4, xs + m0);
    });
  }
  product(y, ldy, x, xc, xs, w, bias, M, act, rows_done, tiles_done);
}

void packed_linear(float* y, size_t ldy, const QuantizedRows& x, const OneDnnWeight& w, const float* bias, size_t M,
                   Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  if (w.precision() != Precision::kInt8) throw Error("quantized input given to a product whose weights are not int8");
  if (M == 0 || w.n() == 0) return;
  // quantize_rows's quads are oneDNN's u8 source rows: k padded to a multiple of 4 (source_stride).
  product(y, ldy, nullptr, x.quads, x.scales, w, bias, M, act, rows_done, tiles_done);
}

void packed_linear(float* y, size_t ldy, const Bf16Rows& x, const OneDnnWeight& w, const float* bias, size_t M,
                   Activation act, const RowsDone* rows_done, const TilesDone* tiles_done) {
  if (w.precision() != Precision::kBF16) throw Error("bf16 input given to a product whose weights are not bf16");
  if (M == 0 || w.n() == 0) return;
  // to_bf16_pairs's pairs are oneDNN's bf16 source rows: k padded to an even count (source_stride).
  product(y, ldy, nullptr, x.pairs, nullptr, w, bias, M, act, rows_done, tiles_done);
}

}  // namespace roberta::kernels
#endif
