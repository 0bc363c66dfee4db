#include "onednn_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "isa.h"
#include "packed_gemm.h"
#include "packed_gemm_int8.h"
#include "roberta/error.h"
#include "runtime/plan.h"

#if defined(ROBERTA_WITH_ONEDNN)
#include "intrinsics.h"
#include <omp.h>

#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <shared_mutex>
#include <unordered_map>

#include "activations.h"
#include "block_loop.h"
#include "util/scratch.h"
#include "util/thread_pool.h"
#endif

namespace roberta::kernels {

bool onednn_built() {
#if defined(ROBERTA_WITH_ONEDNN)
  return true;
#else
  return false;
#endif
}

bool cpu_has_amx(Precision p) {
  const runtime::KernelPlan& plan = runtime::plan();
  return p == Precision::kBF16 ? plan.amx_bf16 : p == Precision::kInt8 ? plan.amx_int8 : false;
}

bool use_onednn(Precision p, const runtime::KernelPlan& plan) {
  using Gemm = runtime::Settings::Gemm;
  if (plan.gemm == Gemm::kOwn) return false;
  if (plan.gemm == Gemm::kOneDnn && !onednn_built())
    throw Error("ROBERTA_GEMM=onednn, but this build has no oneDNN (install libdnnl-dev and rebuild)");
  // Where oneDNN cannot do a precision correctly, ours does it even when oneDNN is asked for.
  if (!onednn_supports(p)) return false;
  if (plan.gemm == Gemm::kOneDnn) return true;
  // The default: bf16 through oneDNN where the plan says so and oneDNN multiplies bf16 natively
  // without AMX (AVX512-BF16; elsewhere it emulates bf16, slowly, and on AMX our tile kernels are
  // the faster ones); fp32 and int8 on ours.
  return p == Precision::kBF16 && plan.bf16_onednn && onednn_isa() == "avx512_core_bf16";
}

bool use_onednn(Precision p) { return use_onednn(p, runtime::plan()); }

#if !defined(ROBERTA_WITH_ONEDNN)

std::string onednn_isa() { return ""; }
bool onednn_supports(Precision) { return false; }

struct OneDnnWeight::Impl {};

OneDnnWeight::OneDnnWeight(const float*, size_t, size_t, Precision) {
  throw Error("this build has no oneDNN (install libdnnl-dev and rebuild)");
}
size_t OneDnnWeight::bytes() const { return 0; }
std::vector<float> OneDnnWeight::dequantized() const { return {}; }
void packed_linear(float*, size_t, const float*, const OneDnnWeight&, const float*, size_t, Activation,
                   const RowsDone*, const TilesDone*) {
  throw Error("this build has no oneDNN");
}
void packed_linear(float*, size_t, const QuantizedRows&, const OneDnnWeight&, const float*, size_t, Activation,
                   const RowsDone*, const TilesDone*) {
  throw Error("this build has no oneDNN");
}
void packed_linear(float*, size_t, const Bf16Rows&, const OneDnnWeight&, const float*, size_t, Activation,
                   const RowsDone*, const TilesDone*) {
  throw Error("this build has no oneDNN");
}
std::string onednn_implementation(const OneDnnWeight&, size_t) { return ""; }

#else

namespace {

using dnnl::memory;
using Dt = memory::data_type;

// Rows per task at most; a call's bands are made equal (e.g. 300 rows: 150 + 150).
constexpr size_t kBandRows = 256;

Dt weight_type(Precision p) { return p == Precision::kF32 ? Dt::f32 : p == Precision::kBF16 ? Dt::bf16 : Dt::s8; }
Dt source_type(Precision p) { return p == Precision::kF32 ? Dt::f32 : p == Precision::kBF16 ? Dt::bf16 : Dt::u8; }
Dt result_type(Precision p) { return p == Precision::kInt8 ? Dt::s32 : Dt::f32; }

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine = [] {
    runtime::detect();  // asks Linux for the AMX tiles, as a process must before using them (oneDNN asks too)
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

// oneDNN runs on the calling thread only: one OpenMP thread for every engine thread that calls it
// (omp_set_num_threads sets the calling thread's own value). Primitives created afterwards are
// single-threaded too (oneDNN fixes a primitive's thread count when it is created).
void single_threaded_onednn() {
  thread_local const bool done = [] {
    omp_set_num_threads(1);
    return true;
  }();
  (void)done;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

// The packed layout of one part (k, cols) of the weight: what oneDNN's matmul picks for a band of
// kBandRows rows. Bands with fewer rows are created with this layout given explicitly.
memory::desc packed_weight_desc(Precision p, size_t cols, size_t k) {
  const auto K = static_cast<memory::dim>(k), C = static_cast<memory::dim>(cols), R = static_cast<memory::dim>(kBandRows);
  const memory::desc src({R, K}, source_type(p), memory::format_tag::ab);
  const memory::desc wei({K, C}, weight_type(p), memory::format_tag::any);
  const memory::desc dst({R, C}, result_type(p), memory::format_tag::ab);
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), cpu_engine()).weights_desc();
}

// Elements per row of x as oneDNN reads it: k padded to int8 quads / bf16 pairs, as our
// quantize_rows / to_bf16_pairs write it.
size_t source_stride(Precision p, size_t k) {
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

// Whether the blocked layout d keeps the output dimension (n) outermost and dense: then the packing
// of columns [0, a + b) is the packing of [0, a) followed by that of [a, a + b), for a and b
// multiples of the column block. Checked on oneDNN's own description of the layout.
bool columns_outermost(const memory::desc& d) {
  const dnnl_memory_desc_t& m = d.data;
  if (m.format_kind != dnnl_blocked || m.ndims != 2 || m.extra.flags != 0) return false;
  const dnnl_blocking_desc_t& b = m.format_desc.blocking;
  memory::dim block[2] = {1, 1};
  for (int i = 0; i < b.inner_nblks; ++i) block[b.inner_idxs[i]] *= b.inner_blks[i];
  const memory::dim inner = block[0] * block[1];
  return m.padded_dims[1] % block[1] == 0 && b.strides[0] == inner && b.strides[1] == m.padded_dims[0] / block[0] * inner;
}

bool same_blocks(const memory::desc& a, const memory::desc& b) {
  const dnnl_blocking_desc_t &x = a.data.format_desc.blocking, &y = b.data.format_desc.blocking;
  if (a.data.data_type != b.data.data_type || a.data.padded_dims[0] != b.data.padded_dims[0] ||
      x.inner_nblks != y.inner_nblks)
    return false;
  for (int i = 0; i < x.inner_nblks; ++i)
    if (x.inner_blks[i] != y.inner_blks[i] || x.inner_idxs[i] != y.inner_idxs[i]) return false;
  return true;
}

struct Key {
  Precision precision;
  size_t rows, cols, k, ldx;
  bool bias;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& key) const {
    size_t h = static_cast<size_t>(key.precision) * 2 + key.bias;
    for (size_t v : {key.rows, key.cols, key.k, key.ldx}) h = h * 1000003u ^ v;
    return h;
  }
};

// The matmul for a band of `rows` rows (row stride ldx in x's elements) of one part: made once
// (oneDNN compiles a kernel, ~1 ms) and kept. The cache holds at most a few hundred entries: bands
// have at most kBandRows rows. `bias`: oneDNN adds an fp32 bias (1, cols) to the fp32 sums, as
// our epilogue would (fp32 and bf16 only).
// Held while a oneDNN primitive is created: one creation at a time. Two threads creating
// primitives at once (the same matmul for two bands, reorders of two weight parts) raced inside
// oneDNN 2.6's own primitive cache as ThreadSanitizer sees it; creation happens once per shape
// (~1 ms), running them stays parallel.
std::mutex& creation_mutex() {
  static std::mutex m;
  return m;
}

const Primitive& primitive(Precision p, size_t rows, size_t cols, size_t k, size_t ldx, bool bias = false) {
  static std::shared_mutex mutex;
  static std::unordered_map<Key, std::unique_ptr<const Primitive>, KeyHash> cache;
  const Key key{p, rows, cols, k, ldx, bias};
  {
    const std::shared_lock lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return *it->second;
  }
  const std::lock_guard one_at_a_time(creation_mutex());
  {
    const std::shared_lock lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return *it->second;
  }
  const auto R = static_cast<memory::dim>(rows), C = static_cast<memory::dim>(cols), K = static_cast<memory::dim>(k);
  const memory::desc src({R, K}, source_type(p), {static_cast<memory::dim>(ldx), 1});
  const memory::desc dst({R, C}, result_type(p), memory::format_tag::ab);
  const memory::desc wei = packed_weight_desc(p, cols, k);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  bool joins = cols % OneDnnWeight::kPartColumns == 0;
  if (joins && cols > OneDnnWeight::kPartColumns) {
    const memory::desc part = packed_weight_desc(p, OneDnnWeight::kPartColumns, k);
    joins = columns_outermost(part) && columns_outermost(wei) && same_blocks(part, wei) &&
            part.data.padded_dims[1] == static_cast<memory::dim>(OneDnnWeight::kPartColumns) &&
            wei.get_size() == part.get_size() * (cols / OneDnnWeight::kPartColumns);
  }
  try {
    const memory::desc bias_desc = bias ? memory::desc({1, C}, Dt::f32, memory::format_tag::ab) : memory::desc();
    const dnnl::matmul::primitive_desc pd(
        bias ? dnnl::matmul::desc(src, wei, bias_desc, dst) : dnnl::matmul::desc(src, wei, dst), attr, cpu_engine());
    auto made = std::make_unique<const Primitive>(
        Primitive{dnnl::matmul(pd), src, wei, dst, pd.scratchpad_desc(), bias_desc, pd.impl_info_str(), joins});
    const std::unique_lock lock(mutex);
    return *cache.try_emplace(key, std::move(made)).first->second;
  } catch (const dnnl::error& e) {
    throw Error(std::string("oneDNN has no matmul for ") + std::to_string(rows) + " x " + std::to_string(k) + " x " +
                std::to_string(cols) + " (" + e.what() + "); ROBERTA_GEMM=own uses the engine's own kernels");
  }
}

}  // namespace

struct OneDnnWeight::Impl {
  struct Free {
    void operator()(char* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<char[], Free> storage;  // the full parts, one after the other
  size_t part_bytes = 0;                  // of one full part
  std::vector<memory> parts;     // part i: columns [i * kPartColumns, ...), packed (k, cols); the
                                 // full ones in `storage`, a narrower last one in its own memory
  std::vector<float> scales;     // int8: per output column
  std::vector<int32_t> offsets;  // int8: 128 · the column's sum of weight bytes (the offset of x's bytes)
  size_t bytes = 0;
};

OneDnnWeight::OneDnnWeight(const float* w, size_t n, size_t k, Precision precision)
    : n_(n), k_(k), precision_(precision) {
  if (!onednn_supports(precision))
    throw Error(std::string("oneDNN cannot multiply ") + (precision == Precision::kInt8 ? "int8" : "bf16") +
                " correctly on this CPU (" + onednn_isa() +
                (precision == Precision::kInt8 ? ": without VNNI its u8 x s8 products saturate in 16 bits)"
                                               : ": no bf16 matmul below AVX-512)"));
  auto impl = std::make_shared<Impl>();
  const size_t parts = (n + kPartColumns - 1) / kPartColumns;
  impl->parts.resize(parts);
  if (precision == Precision::kInt8) {
    impl->scales.resize(n);
    impl->offsets.resize(n);
  }
  const size_t full_parts = n / kPartColumns;
  if (full_parts) {
    single_threaded_onednn();
    impl->part_bytes = packed_weight_desc(precision, kPartColumns, k).get_size();
    impl->storage.reset(static_cast<char*>(::operator new[](full_parts * impl->part_bytes, std::align_val_t(64))));
  }
  std::vector<size_t> part_bytes(parts);
  // Parts in parallel: each is rounded / quantized by our code into the product's precision (so
  // that every path rounds alike), plain (cols, k), then reordered by oneDNN into its layout.
  ThreadPool::global()->parallel_for(parts, [&](size_t part) {
    const size_t c0 = part * kPartColumns, cols = std::min(kPartColumns, n - c0);
    thread_local std::vector<uint16_t> bf16_buffer;
    thread_local std::vector<int8_t> int8_buffer;
    const util::Scratch<uint16_t> bf16(bf16_buffer, precision == Precision::kBF16 ? cols * k : 0);
    const util::Scratch<int8_t> q(int8_buffer, precision == Precision::kInt8 ? cols * k : 0);
    const float* src_rows = w + c0 * k;
    const void* plain = src_rows;
    if (precision == Precision::kBF16) {
      to_bf16_row(src_rows, cols * k, bf16.data());
      plain = bf16.data();
    } else if (precision == Precision::kInt8) {
      for (size_t j = 0; j < cols; ++j) {
        int8_t* row = q.data() + j * k;
        impl->scales[c0 + j] = quantize_weight_row(src_rows + j * k, k, row);
        int32_t sum = 0;
        for (size_t kk = 0; kk < k; ++kk) sum += row[kk];
        impl->offsets[c0 + j] = 128 * sum;
      }
      plain = q.data();
    }
    single_threaded_onednn();
    const memory::desc packed = packed_weight_desc(precision, cols, k);
    // Part (k, cols) of Wᵀ: element (kk, j) is W[c0 + j][kk], i.e. strides (1, k).
    const memory::desc src_desc({static_cast<memory::dim>(k), static_cast<memory::dim>(cols)}, weight_type(precision),
                                {1, static_cast<memory::dim>(k)});
    memory src(src_desc, cpu_engine(), const_cast<void*>(plain));
    memory dst = part < full_parts ? memory(packed, cpu_engine(), impl->storage.get() + part * impl->part_bytes)
                                   : memory(packed, cpu_engine());
    const dnnl::reorder reorder = [&] {
      const std::lock_guard one_at_a_time(creation_mutex());
      return dnnl::reorder(src, dst);
    }();
    reorder.execute(thread_stream(), src, dst);
    thread_stream().wait();
    part_bytes[part] = packed.get_size();
    impl->parts[part] = std::move(dst);
  });
  for (size_t b : part_bytes) impl->bytes += b;
  impl->bytes += (impl->scales.size() + impl->offsets.size()) * 4;
  impl_ = std::move(impl);
}

size_t OneDnnWeight::bytes() const { return impl_ ? impl_->bytes : 0; }

std::vector<float> OneDnnWeight::dequantized() const {
  std::vector<float> out(n_ * k_);
  single_threaded_onednn();
  for (size_t part = 0; part < impl_->parts.size(); ++part) {
    const memory& packed = impl_->parts[part];
    const size_t c0 = part * kPartColumns, cols = std::min(kPartColumns, n_ - c0);
    // Reordered into the (n, k) rows of columns c0..: element (kk, j) at out[(c0 + j) * k + kk].
    const memory::desc plain_desc({static_cast<memory::dim>(k_), static_cast<memory::dim>(cols)}, Dt::f32,
                                  {1, static_cast<memory::dim>(k_)});
    memory plain(plain_desc, cpu_engine(), out.data() + c0 * k_);
    const dnnl::reorder reorder = [&] {
      const std::lock_guard one_at_a_time(creation_mutex());
      return dnnl::reorder(packed, plain);
    }();
    reorder.execute(thread_stream(), const_cast<memory&>(packed), plain);
    thread_stream().wait();
  }
  if (precision_ == Precision::kInt8)
    for (size_t row = 0; row < n_; ++row)
      for (size_t kk = 0; kk < k_; ++kk) out[row * k_ + kk] *= impl_->scales[row];
  return out;
}

std::string onednn_implementation(const OneDnnWeight& w, size_t rows) {
  single_threaded_onednn();
  const size_t cols = std::min(OneDnnWeight::kPartColumns, w.n());
  const size_t ldx = source_stride(w.precision(), w.k());
  return primitive(w.precision(), rows, cols, w.k(), ldx).implementation;
}

bool onednn_supports(Precision p) {
  const std::string isa = onednn_isa();
  const bool vnni = isa == "avx512_core_vnni" || isa == "avx512_core_bf16" || isa == "avx512_core_amx" ||
                    isa == "avx2_vnni";
  const bool avx512 = vnni && isa != "avx2_vnni";
  switch (p) {
    case Precision::kF32: return true;
    case Precision::kBF16: return avx512 || isa == "avx512_core";
    case Precision::kInt8: return vnni;
  }
  return false;
}

std::string onednn_isa() {
  using dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case cpu_isa::avx512_core: return "avx512_core";
    case cpu_isa::avx2_vnni: return "avx2_vnni";
    case cpu_isa::avx2: return "avx2";
    case cpu_isa::avx: return "avx";
    case cpu_isa::sse41: return "sse41";
    default: return "other";
  }
}

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

}  // namespace

namespace {

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

}  // namespace

namespace {

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

#endif  // ROBERTA_WITH_ONEDNN

}  // namespace roberta::kernels
