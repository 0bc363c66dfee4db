// roberta-kernel-bench: Google Benchmark of the engine's kernels on roberta-base's (and roberta-large's)
// shapes, next to OpenBLAS's sgemm and the machine's memory read bandwidth. Usage:
//   build/roberta-kernel-bench [--benchmark_filter=Linear] [--threads=2]
// GFLOP/s and GB/s are reported as counters ("FLOPS", "bytes_per_second").
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "runtime/cpu.h"
#include "kernels/onednn_gemm.h"
#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"
#include "util/thread_pool.h"
#include "roberta/roberta.h"

namespace {

std::vector<float> random_vector(size_t n, float scale = 1.0f) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// The four products of an encoder layer: Q/K/V joined, attention output, FFN in, FFN out
// (roberta-base's at 16, 128 and 1024 rows, then roberta-large's at 1024 rows: hidden 1024, FFN 4096).
const std::vector<std::vector<int64_t>> kShapes = {
    {16, 2304, 768},   {16, 768, 768},    {16, 3072, 768},   {16, 768, 3072},    //
    {128, 2304, 768},  {128, 768, 768},   {128, 3072, 768},  {128, 768, 3072},   //
    {1024, 2304, 768}, {1024, 768, 768},  {1024, 3072, 768}, {1024, 768, 3072},  //
    {1024, 3072, 1024}, {1024, 1024, 1024}, {1024, 4096, 1024}, {1024, 1024, 4096}};

void set_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["FLOPS"] =
      benchmark::Counter(flops_per_iteration, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// y (M, N) = x (M, K) · Wᵀ + b with the weight packed once, as the model does.
void BM_PackedLinear(benchmark::State& state) {
  const size_t M = state.range(0), N = state.range(1), K = state.range(2);
  // Several copies of the weight, used in turn, so that it comes from memory as in a forward pass.
  const size_t copies = std::max<size_t>(1, (256u << 20) / (N * K * 4));
  const std::vector<float> w = random_vector(N * K, 0.02f), x = random_vector(M * K), b = random_vector(N);
  std::vector<roberta::kernels::PackedWeight> packed;
  for (size_t i = 0; i < copies; ++i) packed.emplace_back(w.data(), N, K);
  std::vector<float> y(M * N);
  size_t i = 0;
  for (auto _ : state) {
    roberta::kernels::packed_linear(y.data(), N, x.data(), packed[i++ % copies], b.data(), M);
    benchmark::DoNotOptimize(y.data());
  }
  set_flops(state, 2.0 * M * N * K);
}

// The same product with bf16 and int8 weights (x converted or quantized per call, as the model does).
// Warm: one copy of the weight, so that it stays in cache from call to call (the kernel's own rate,
// without the reading of the weights from memory that a forward pass has).
template <class Packed, bool Warm = false, class... Extra>
void BM_PackedLinearLowPrecision(benchmark::State& state, Extra... extra) {
  const size_t M = state.range(0), N = state.range(1), K = state.range(2);
  const size_t copies = Warm ? 1 : std::max<size_t>(1, (256u << 20) / (N * K * 4));
  const std::vector<float> w = random_vector(N * K, 0.02f), x = random_vector(M * K), b = random_vector(N);
  std::vector<Packed> packed;
  for (size_t i = 0; i < copies; ++i) packed.emplace_back(w.data(), N, K, extra...);
  std::vector<float> y(M * N);
  size_t i = 0;
  for (auto _ : state) {
    roberta::kernels::packed_linear(y.data(), N, x.data(), packed[i++ % copies], b.data(), M);
    benchmark::DoNotOptimize(y.data());
  }
  set_flops(state, 2.0 * M * N * K);
}
// The same products through oneDNN's matmul (src/kernels/onednn_gemm.h), where the build has it.
void BM_OneDnnLinear(benchmark::State& state, roberta::kernels::Precision precision) {
  if (!roberta::kernels::onednn_built()) return state.SkipWithError("this build has no oneDNN");
  BM_PackedLinearLowPrecision<roberta::kernels::OneDnnWeight>(state, precision);
}
void BM_OneDnnLinearF32(benchmark::State& state) { BM_OneDnnLinear(state, roberta::kernels::Precision::kF32); }
void BM_OneDnnLinearBf16(benchmark::State& state) { BM_OneDnnLinear(state, roberta::kernels::Precision::kBF16); }
void BM_OneDnnLinearInt8(benchmark::State& state) { BM_OneDnnLinear(state, roberta::kernels::Precision::kInt8); }
void BM_PackedLinearBf16(benchmark::State& state) { BM_PackedLinearLowPrecision<roberta::kernels::PackedWeightBf16>(state); }
void BM_PackedLinearInt8(benchmark::State& state) { BM_PackedLinearLowPrecision<roberta::kernels::PackedWeightInt8>(state); }
void BM_PackedLinearWarm(benchmark::State& state) {
  BM_PackedLinearLowPrecision<roberta::kernels::PackedWeight, true>(state);
}
void BM_PackedLinearBf16Warm(benchmark::State& state) {
  BM_PackedLinearLowPrecision<roberta::kernels::PackedWeightBf16, true>(state);
}
void BM_PackedLinearInt8Warm(benchmark::State& state) {
  BM_PackedLinearLowPrecision<roberta::kernels::PackedWeightInt8, true>(state);
}

// The same product through OpenBLAS (weights stored (N, K), transposed in the call), threaded by OpenBLAS.
void BM_OpenBlasSgemm(benchmark::State& state) {
  const size_t M = state.range(0), N = state.range(1), K = state.range(2);
  const size_t copies = std::max<size_t>(1, (256u << 20) / (N * K * 4));
  std::vector<std::vector<float>> w(copies, random_vector(N * K, 0.02f));
  const std::vector<float> x = random_vector(M * K);
  std::vector<float> y(M * N);
  openblas_set_num_threads(static_cast<int>(roberta::ThreadPool::global()->num_threads()));
  size_t i = 0;
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x.data(), K, w[i++ % copies].data(), K, 0.0f,
                y.data(), N);
    benchmark::DoNotOptimize(y.data());
  }
  openblas_set_num_threads(1);
  set_flops(state, 2.0 * M * N * K);
}

// Self-attention of one sequence of L tokens, 12 heads of 64 (the (L, 3H) Q/K/V input), with
// fp32 products or bf16 ones (where the CPU has AVX512-BF16; the fp32 path otherwise).
void self_attention_bench(benchmark::State& state, roberta::kernels::AttentionPrecision precision) {
  const size_t L = state.range(0), heads = 12, d = 64, H = heads * d;
  const std::vector<float> qkv = random_vector(L * 3 * H);
  std::vector<float> ctx(L * H);
  const size_t offsets[2] = {0, L};
  for (auto _ : state) {
    roberta::kernels::self_attention(ctx.data(), qkv.data(), offsets, 1, heads, d, {}, precision);
    benchmark::DoNotOptimize(ctx.data());
  }
  set_flops(state, 4.0 * L * L * H);
}
void BM_SelfAttention(benchmark::State& state) { self_attention_bench(state, roberta::kernels::AttentionPrecision::kFp32); }
void BM_SelfAttentionBf16(benchmark::State& state) {
  self_attention_bench(state, roberta::kernels::AttentionPrecision::kBf16);
}

// The sum of p[0, n): with AVX-512 or AVX2 loads where the CPU has them. (This loop written for
// the compiler, which vectorised it for SSE2 only, read 16-17 GB/s on the Xeon with AMX where
// 64-byte loads read 22-23, less than the engine's own products then read; AVX2's 32-byte loads,
// alone, read 6-9% less than 64-byte ones in this benchmark there, so both are kept.)
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) float sum_avx512(const float* p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(p + i + 16));
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(a0, a1));
  float s = 0;
  for (float v : lanes) s += v;
  for (; i < n; ++i) s += p[i];
  return s;
}
__attribute__((target("avx2"))) float sum_avx2(const float* p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + 8));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(a0, a1));
  float s = 0;
  for (float v : lanes) s += v;
  for (; i < n; ++i) s += p[i];
  return s;
}
#endif
float sum_floats(const float* p, size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  const roberta::runtime::Isa isa = roberta::runtime::detect().isa;  // the CPU's level, as the engine detects it
  if (isa >= roberta::runtime::Isa::kAvx512) return sum_avx512(p, n);
  if (isa >= roberta::runtime::Isa::kAvx2) return sum_avx2(p, n);
#endif
  float acc[16] = {};
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; ++k) acc[k] += p[i + k];
  float s = 0;
  for (float a : acc) s += a;
  for (; i < n; ++i) s += p[i];
  return s;
}

// Read bandwidth over 512 MB split across the pool: the ceiling for small-batch inference,
// which streams every weight once per forward pass.
void BM_ReadBandwidth(benchmark::State& state) {
  const size_t n = (512u << 20) / sizeof(float);
  std::vector<float> data(n, 1.0f);
  const auto pool_ref = roberta::ThreadPool::global();
  roberta::ThreadPool& pool = *pool_ref;
  const size_t parts = pool.num_threads() * 8;
  std::vector<float> sums(parts);
  for (auto _ : state) {
    pool.parallel_for(parts, [&](size_t p) {
      const size_t begin = n * p / parts, end = n * (p + 1) / parts;
      sums[p] = sum_floats(data.data() + begin, end - begin);
    });
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * sizeof(float)));
}

// Every GEMM benchmark runs on kShapes.
void roberta_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K"});
  for (const auto& s : kShapes) b->Args(s);
}

// roberta-base's four products at 1024 rows, for the Warm benchmarks.
void warm_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K"});
  for (const auto& s : kShapes)
    if (s[0] == 1024 && s[1] % 768 == 0 && s[2] % 768 == 0) b->Args(s);
}

// The MLM decoder's product (roberta-base's vocabulary): fill-mask's few mask rows, a batch's,
// every token of 8 x 128.
void vocabulary_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K"});
  for (int64_t M : {1, 8, 64, 1024}) b->Args({M, 50265, 768});
}

}  // namespace

BENCHMARK(BM_PackedLinear)->Name("BM_VocabularyPacked")->Apply(vocabulary_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_OpenBlasSgemm)->Name("BM_VocabularyOpenBlas")->Apply(vocabulary_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_PackedLinear)->Apply(roberta_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_PackedLinearBf16)->Apply(roberta_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_PackedLinearInt8)->Apply(roberta_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_PackedLinearWarm)->Apply(warm_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_PackedLinearBf16Warm)->Apply(warm_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_PackedLinearInt8Warm)->Apply(warm_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_OneDnnLinearF32)->Apply(roberta_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_OneDnnLinearBf16)->Apply(roberta_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_OneDnnLinearInt8)->Apply(roberta_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_OpenBlasSgemm)->Apply(roberta_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_SelfAttention)->ArgName("L")->Arg(16)->Arg(128)->Arg(512)->Arg(2048)->Arg(4096)->Arg(8192)
    ->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_SelfAttentionBf16)->ArgName("L")->Arg(16)->Arg(128)->Arg(512)->Arg(2048)->Arg(4096)->Arg(8192)
    ->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ReadBandwidth)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  unsigned threads = 0;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0)
      threads = static_cast<unsigned>(std::stoul(argv[i] + 10));
    else
      rest.push_back(argv[i]);
  }
  roberta::set_num_threads(threads);
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
