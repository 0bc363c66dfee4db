// oneDNN's matmul for the packed products (kernels/onednn_gemm.h): when it runs, the weights
// packed in its layout, and the primitives, made once per shape. The products: onednn_product.cpp.
#include "kernels/onednn_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "kernels/isa.h"
#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"
#include "roberta/error.h"
#include "runtime/plan.h"

#if defined(ROBERTA_WITH_ONEDNN)
#include "kernels/intrinsics.h"
#include <omp.h>

#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <shared_mutex>
#include <unordered_map>

#include "kernels/activations.h"
#include "kernels/block_loop.h"
#include "kernels/gemm/onednn_parts.h"
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

namespace onednn_impl {

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

namespace {

// The packed layout of one part (k, cols) of the weight: what oneDNN's matmul picks for a band of
// kBandRows rows. Bands with fewer rows are created with this layout given explicitly.
memory::desc packed_weight_desc(Precision p, size_t cols, size_t k) {
  const auto K = static_cast<memory::dim>(k), C = static_cast<memory::dim>(cols), R = static_cast<memory::dim>(kBandRows);
  const memory::desc src({R, K}, source_type(p), memory::format_tag::ab);
  const memory::desc wei({K, C}, weight_type(p), memory::format_tag::any);
  const memory::desc dst({R, C}, result_type(p), memory::format_tag::ab);
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), cpu_engine()).weights_desc();
}

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

// Held while a oneDNN primitive is created: one creation at a time. Two threads creating
// primitives at once (the same matmul for two bands, reorders of two weight parts) raced inside
// oneDNN 2.6's own primitive cache as ThreadSanitizer sees it; creation happens once per shape
// (~1 ms), running them stays parallel.
std::mutex& creation_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

// The matmul for a band of `rows` rows (row stride ldx in x's elements) of one part: made once
// (oneDNN compiles a kernel) and kept. The cache holds at most a few hundred entries: bands have
// at most kBandRows rows. `bias`: oneDNN adds an fp32 bias (1, cols) to the fp32 sums, as our
// epilogue would (fp32 and bf16 only).
const Primitive& primitive(Precision p, size_t rows, size_t cols, size_t k, size_t ldx, bool bias) {
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

}  // namespace onednn_impl

using namespace onednn_impl;

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

#endif  // ROBERTA_WITH_ONEDNN

}  // namespace roberta::kernels
