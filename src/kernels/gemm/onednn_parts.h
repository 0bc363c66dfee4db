#pragma once
// What the oneDNN products' two files share (onednn.cpp: weights and primitives; onednn_product.cpp:
// the products and their epilogues). Only with ROBERTA_WITH_ONEDNN.
#if defined(ROBERTA_WITH_ONEDNN)
#include <cstddef>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "kernels/onednn_gemm.h"

namespace roberta::kernels {

namespace onednn_impl {

using dnnl::memory;
using Dt = memory::data_type;

// Rows per task at most; a call's bands are made equal (e.g. 300 rows: 150 + 150).
constexpr size_t kBandRows = 256;

inline Dt weight_type(Precision p) { return p == Precision::kF32 ? Dt::f32 : p == Precision::kBF16 ? Dt::bf16 : Dt::s8; }
inline Dt source_type(Precision p) { return p == Precision::kF32 ? Dt::f32 : p == Precision::kBF16 ? Dt::bf16 : Dt::u8; }
inline Dt result_type(Precision p) { return p == Precision::kInt8 ? Dt::s32 : Dt::f32; }
// Elements per row of x as oneDNN reads it: k padded to int8 quads / bf16 pairs, as our
// quantize_rows / to_bf16_pairs write it.
inline size_t source_stride(Precision p, size_t k) {
  return p == Precision::kInt8 ? (k + 3) / 4 * 4 : p == Precision::kBF16 ? (k + 1) / 2 * 2 : k;
}

struct Primitive {
  dnnl::matmul matmul;
  memory::desc src, weights, dst, scratchpad, bias;
  std::string implementation;
  // Whether the packed weight of these cols is, byte for byte, the packed parts of kPartColumns
  // columns one after the other (so that one call can take several consecutive parts).
  bool joins_parts = false;
};

// The engine, made once (after asking Linux for the AMX tiles).
const dnnl::engine& cpu_engine();
// Makes oneDNN run on the calling thread only (once per thread).
void single_threaded_onednn();
// The calling thread's stream.
dnnl::stream& thread_stream();
// The matmul for a band of `rows` rows (row stride ldx in x's elements) of one part of cols
// columns: made once and kept. `bias`: oneDNN adds an fp32 bias (fp32 and bf16 only).
const Primitive& primitive(Precision p, size_t rows, size_t cols, size_t k, size_t ldx, bool bias = false);

}  // namespace onednn_impl

struct OneDnnWeight::Impl {
  struct Free {
    void operator()(char* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<char[], Free> storage;  // the full parts, one after the other
  size_t part_bytes = 0;                  // of one full part
  // part i: columns [i * kPartColumns, ...), packed (k, cols); the full ones in `storage`, a
  // narrower last one in its own memory
  std::vector<onednn_impl::memory> parts;
  std::vector<float> scales;     // int8: per output column
  std::vector<int32_t> offsets;  // int8: 128 · the column's sum of weight bytes (the offset of x's bytes)
  size_t bytes = 0;
};

}  // namespace roberta::kernels
#endif
