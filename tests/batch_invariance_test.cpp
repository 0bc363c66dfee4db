// Batch invariance: a row of a product, and the outputs of a sequence, are the same bit for bit
// whatever else shares the product or the forward pass (how many rows, which other sequences), in
// every precision and on every kernel path. The server packs the texts of many callers into one
// pass, and each caller must get exactly what it would get alone.
//
// CTest runs these tests under every ROBERTA_ISA cap, both ROBERTA_GEMM back ends and every
// OPENBLAS_CORETYPE the installed OpenBLAS offers (tests/CMakeLists.txt): no product may rest on
// a library's choice of kernel by the number of rows (one opt-in exception, bf16_rows_depend_on_the_batch).
#include <gtest/gtest.h>

#include <cblas.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/onednn_gemm.h"
#include "kernels/packed_gemm.h"
#include "model/packed_linear.h"
#include "random_model.h"
#include "roberta/model.h"
#include "roberta/threads.h"

namespace {

using namespace roberta;

// Why this test cannot run under the OpenBLAS core that CTest forces (ROBERTA_TEST_OPENBLAS_CORE,
// set with OPENBLAS_CORETYPE): this CPU lacks the instructions of the core's kernels (forcing them
// would crash), or this OpenBLAS offers no such core and runs another. "" where it runs, or where
// no core is forced. Asked before anything calls OpenBLAS.
std::string forced_openblas_core_problem() {
  const char* forced = std::getenv("ROBERTA_TEST_OPENBLAS_CORE");
  if (!forced || !*forced) return "";
  const std::string core = forced;
#if defined(__x86_64__)
  __builtin_cpu_init();
  // The instructions each core's kernels use beyond x86-64's SSE2.
  const bool sse3 = __builtin_cpu_supports("sse3"), ssse3 = __builtin_cpu_supports("ssse3"),
             sse41 = __builtin_cpu_supports("sse4.1"), sse42 = __builtin_cpu_supports("sse4.2"),
             sse4a = __builtin_cpu_supports("sse4a"), avx = __builtin_cpu_supports("avx"),
             fma4 = __builtin_cpu_supports("fma4"),
             avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
             avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512cd"),
             bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool amd_3dnow = __get_cpuid(0x80000001, &a, &b, &c, &d) && (d >> 31) & 1;  // (gone since AMD's Bulldozer)
  const std::map<std::string, bool> runs = {
      {"Prescott", sse3}, {"Opteron", amd_3dnow}, {"Opteron_SSE3", sse3 && amd_3dnow}, {"Core2", ssse3},     {"Atom", ssse3},      {"Nano", ssse3},
      {"Penryn", sse41},  {"Dunnington", sse41},  {"Nehalem", sse42},   {"Barcelona", sse4a}, {"Sandybridge", avx},
      {"Bulldozer", fma4}, {"Piledriver", fma4},  {"Steamroller", fma4}, {"Excavator", fma4}, {"Haswell", avx2},
      {"Zen", avx2},      {"SkylakeX", avx512},   {"Cooperlake", bf16}};
  const auto it = runs.find(core);
  if (it == runs.end()) return "OpenBLAS core " + core + ": not one this test knows the instructions of";
  if (!it->second) return "OpenBLAS core " + core + ": this CPU lacks the instructions of its kernels";
#endif
  const std::string runs_here = openblas_get_corename();
  if (runs_here != core) return "OpenBLAS core " + core + ": this OpenBLAS offers no such core (it runs " + runs_here + ")";
  return "";
}

#define SKIP_UNLESS_OPENBLAS_CORE_RUNS()                                               \
  if (const std::string problem = forced_openblas_core_problem(); !problem.empty()) \
  GTEST_SKIP() << problem

// ROBERTA_GEMM=onednn on a CPU with AMX sends bf16 products to oneDNN's AMX matmul, which picks
// its kernel by the number of rows: a row's last bits then depend on the rows beside it. Only that
// opt-in does so (by default bf16 runs on our AMX kernels there, use_onednn); its bf16 cases are
// said and left out (docs/environment.md).
bool bf16_rows_depend_on_the_batch() {
  return kernels::use_onednn(kernels::Precision::kBF16) && kernels::onednn_isa() == "avx512_core_amx";
}
bool leave_out(WeightType type, const std::string& what) {
  if (type != WeightType::kBF16 || !bf16_rows_depend_on_the_batch()) return false;
  std::cout << "note: " << what << " left out: ROBERTA_GEMM=onednn's bf16 matmul on AMX is not batch-invariant\n";
  return true;
}

std::vector<float> random_values(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// "" where row r of `got` (row stride ld) equals `want` (n values) bit for bit, else where it first
// differs.
std::string first_difference(const float* got, const float* want, size_t n) {
  if (std::memcmp(got, want, n * sizeof(float)) == 0) return "";
  for (size_t j = 0; j < n; ++j)
    if (std::memcmp(got + j, want + j, sizeof(float)) != 0) {
      std::ostringstream s;
      s.precision(9);
      s << "column " << j << ": " << got[j] << " in the larger product, " << want[j] << " alone";
      return s.str();
    }
  return "";
}

// The thread counts a product of M rows is split over (the pool's default at the end of a test):
// 1, 2, 3 and 8 in turn, whatever this machine has.
class ThreadsByRows {
 public:
  ~ThreadsByRows() { set_num_threads(0); }
  void set(size_t M) const { set_num_threads(kCounts[M % 4]); }

 private:
  static constexpr unsigned kCounts[] = {1, 2, 3, 8};
};

// The product y = act(x · Wᵀ + b) of M rows, for each M asked, against each row multiplied alone
// on one thread.
template <class Apply>
void expect_rows_alone(const Apply& apply, size_t N, size_t K, const std::vector<size_t>& row_counts,
                       const std::string& what) {
  const size_t most = *std::max_element(row_counts.begin(), row_counts.end());
  const std::vector<float> x = random_values(most * K, 1.0f, 11);
  std::vector<float> alone(most * N);
  const ThreadsByRows threads;
  threads.set(0);
  for (size_t r = 0; r < most; ++r) apply(alone.data() + r * N, x.data() + r * K, 1);
  for (size_t M : row_counts) {
    std::vector<float> y(M * N);
    threads.set(M);
    apply(y.data(), x.data(), M);
    for (size_t r = 0; r < M; ++r) {
      const std::string diff = first_difference(y.data() + r * N, alone.data() + r * N, N);
      ASSERT_EQ(diff, "") << what << " N=" << N << " K=" << K << ": row " << r << " of a product of " << M
                          << " rows differs from the row alone, " << diff;
    }
  }
}

std::vector<size_t> one_to(size_t n) {
  std::vector<size_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i + 1;
  return v;
}

// (N, K, row counts): edges of the panels, of the k slices (fp32 and bf16 slice k above 1024) and
// of the row chunks and bands (128 rows of 8, 256-row oneDNN bands).
struct Shape {
  size_t n, k;
  std::vector<size_t> rows;
};
std::vector<Shape> shapes() {
  return {{40, 24, one_to(64)},
          {200, 768, one_to(64)},
          {96, 3072, one_to(64)},
          {2304, 768, {1, 7, 16, 33, 64, 100, 128, 129, 200, 257, 300}}};
}

TEST(BatchInvariance, EveryProductsRowsAreTheRowsAlone) {
  SKIP_UNLESS_OPENBLAS_CORE_RUNS();
  for (const Shape& s : shapes()) {
    const std::vector<float> w = random_values(s.n * s.k, 0.05f, 3), b = random_values(s.n, 0.5f, 5);
    for (WeightType type : {WeightType::kF32, WeightType::kBF16, WeightType::kInt8}) {
      if (leave_out(type, "bf16 products")) continue;
      const PackedLinear p = PackedLinear::join({{w.data(), b.data(), s.n, s.k}}, type);
      for (kernels::Activation act : {kernels::Activation::kLinear, kernels::Activation::kGelu}) {
        const std::string what = std::string(type == WeightType::kF32 ? "fp32" : type == WeightType::kBF16 ? "bf16" : "int8") +
                                 (act == kernels::Activation::kGelu ? " GELU" : "");
        expect_rows_alone([&](float* y, const float* x, size_t M) { p.apply(y, s.n, x, M, act); }, s.n, s.k, s.rows,
                          what);
      }
    }
  }
}

// The MLM decoder's product: always our fp32 kernel (model/parts.h), whatever ROBERTA_GEMM says.
TEST(BatchInvariance, VocabularyProductsRowsAreTheRowsAlone) {
  SKIP_UNLESS_OPENBLAS_CORE_RUNS();
  const size_t V = 5003, H = 768;
  const std::vector<float> w = random_values(V * H, 0.05f, 3), b = random_values(V, 0.5f, 5);
  const kernels::PackedWeight packed(w.data(), V, H);
  expect_rows_alone([&](float* y, const float* x, size_t M) { kernels::packed_linear(y, V, x, packed, b.data(), M); },
                    V, H, one_to(64), "vocabulary");
}

// A sequence's hidden states and MLM logits alone on one thread, and inside batches of 1 to 64
// logit rows and of other sequences before and after it, on 1 to 8 threads.
void expect_sequence_alone(const Model& model, const std::string& what) {
  const int32_t V = static_cast<int32_t>(model.config().vocab_size);
  std::mt19937 rng(9);
  std::uniform_int_distribution<int32_t> id(3, V - 1);
  const auto sequence = [&](size_t n) {
    std::vector<int32_t> s{0};
    while (s.size() + 1 < n) s.push_back(id(rng));
    s.push_back(2);
    return s;
  };
  const std::vector<int32_t> mine = sequence(9);
  const size_t H = static_cast<size_t>(model.config().hidden_size), L = mine.size();
  const bool mlm = model.has_lm_head();
  Batch single;
  single.add_sequence(mine);
  ForwardOptions o;
  o.logits = mlm;
  o.logit_rows = {4};  // one row: the mask's, as fill-mask asks
  const ThreadsByRows threads;
  threads.set(0);
  const Outputs alone = model.forward(single, o);
  for (size_t others = 0; others < 64; ++others) {
    // `others` logit rows of other sequences, split before and after mine, of varied lengths.
    Batch batch;
    std::vector<size_t> rows;
    const size_t before = others / 2;
    size_t mine_at = 0;
    for (size_t part = 0; part < 2; ++part) {
      const size_t count = part == 0 ? before : others - before;
      size_t done = 0;
      while (done < count) {
        const std::vector<int32_t> s = sequence(2 + (done * 7 + others) % 20);
        for (size_t t = 0; t < s.size() && done < count; ++t, ++done) rows.push_back(batch.num_tokens() + t);
        batch.add_sequence(s);
      }
      if (part == 0) {
        mine_at = batch.num_tokens();
        rows.insert(rows.begin() + static_cast<ptrdiff_t>(before), mine_at + 4);
        batch.add_sequence(mine);
      }
    }
    o.logit_rows = rows;
    threads.set(others);
    const Outputs out = model.forward(batch, o);
    for (size_t t = 0; t < L; ++t) {
      const std::string diff =
          first_difference(out.last_hidden_state.row(mine_at + t), alone.last_hidden_state.row(t), H);
      ASSERT_EQ(diff, "") << what << ": token " << t << "'s hidden state in a batch of " << batch.num_sequences()
                          << " sequences (" << batch.num_tokens() << " tokens) differs from the sequence alone, "
                          << diff;
    }
    if (mlm) {
      const std::string diff = first_difference(out.logits.row(before), alone.logits.row(0), out.logits.cols);
      ASSERT_EQ(diff, "") << what << ": the MLM logits of one row among " << rows.size()
                          << " differ from the row alone, " << diff;
    }
  }
}

struct ModelCase {
  const char* name;
  test::RandomShape shape;
};

TEST(BatchInvariance, ASequencesOutputsDoNotDependOnTheBatch) {
  SKIP_UNLESS_OPENBLAS_CORE_RUNS();
  // Heads of 64 (the fast attention paths), heads of 4 and relative positions (the general one).
  const std::vector<ModelCase> cases = {{"heads of 64", {128, 2, 256, 2, "absolute"}},
                                        {"heads of 4", {8, 2, 16, 1, "absolute"}},
                                        {"relative_key_query", {128, 2, 256, 1, "relative_key_query"}}};
  for (const ModelCase& c : cases) {
    test::TempDir dir;
    test::write_random_model(dir.path(), "mlm", {}, c.shape);
    for (WeightType type : {WeightType::kF32, WeightType::kBF16, WeightType::kInt8}) {
      if (leave_out(type, std::string(c.name) + " bf16")) continue;
      const Model model = Model::load(dir.path(), {.weights = type});
      expect_sequence_alone(model, std::string(c.name) + (type == WeightType::kF32    ? " fp32"
                                                          : type == WeightType::kBF16 ? " bf16"
                                                                                      : " int8"));
    }
  }
}

TEST(BatchInvariance, DemoModelsSequenceDoesNotDependOnTheBatch) {
  SKIP_UNLESS_OPENBLAS_CORE_RUNS();
  for (WeightType type : {WeightType::kF32, WeightType::kBF16, WeightType::kInt8})
    if (!leave_out(type, "demo model bf16"))
      expect_sequence_alone(Model::load(ROBERTA_DEMO_MODEL, {.weights = type}), "demo model");
}

}  // namespace
