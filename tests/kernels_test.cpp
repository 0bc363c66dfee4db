// Kernels against float64 references, and the instruction-set choice (kernels/isa.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "kernels/isa.h"
#include "kernels/layer_norm.h"
#include "kernels/packed_gemm.h"
#include "roberta/error.h"
#include "test_util.h"

namespace {

using roberta::kernels::Isa;

// LayerNorm(x + residual) in float64.
std::vector<double> layer_norm_reference(const std::vector<float>& x, const std::vector<float>& r,
                                         const std::vector<float>& g, const std::vector<float>& b, size_t rows,
                                         size_t cols, double eps) {
  std::vector<double> out(rows * cols);
  for (size_t i = 0; i < rows; ++i) {
    double mean = 0, var = 0;
    for (size_t c = 0; c < cols; ++c) mean += static_cast<double>(x[i * cols + c] + r[i * cols + c]);
    mean /= static_cast<double>(cols);
    for (size_t c = 0; c < cols; ++c) {
      const double d = static_cast<double>(x[i * cols + c] + r[i * cols + c]) - mean;
      var += d * d;
    }
    var /= static_cast<double>(cols);
    for (size_t c = 0; c < cols; ++c)
      out[i * cols + c] = (static_cast<double>(x[i * cols + c] + r[i * cols + c]) - mean) / std::sqrt(var + eps) * g[c] + b[c];
  }
  return out;
}

// The engine calls layer_norm with out == residual (and the embeddings with out == x): the result
// must be the same as into a separate buffer. (Regression: the row kernel marked x and residual
// __restrict while out aliased them — undefined behaviour that GCC 12 happened not to exploit.)
TEST(LayerNorm, OutputMayAliasInputOrResidual) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  for (size_t cols : {1, 7, 8, 33, 768}) {
    const size_t rows = 37;
    std::vector<float> x(rows * cols), r(rows * cols), g(cols), b(cols);
    for (auto* v : {&x, &r, &g, &b})
      for (auto& e : *v) e = dist(rng);
    const auto want = layer_norm_reference(x, r, g, b, rows, cols, 1e-5);
    std::vector<float> separate(rows * cols), into_x = x, into_r = r;
    roberta::kernels::layer_norm(separate.data(), x.data(), r.data(), g.data(), b.data(), rows, cols, 1e-5);
    roberta::kernels::layer_norm(into_x.data(), into_x.data(), r.data(), g.data(), b.data(), rows, cols, 1e-5);
    roberta::kernels::layer_norm(into_r.data(), x.data(), into_r.data(), g.data(), b.data(), rows, cols, 1e-5);
    for (size_t i = 0; i < rows * cols; ++i) {
      ASSERT_NEAR(separate[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << "cols " << cols << " element " << i;
      ASSERT_EQ(into_x[i], separate[i]) << "out == x, cols " << cols << " element " << i;
      ASSERT_EQ(into_r[i], separate[i]) << "out == residual, cols " << cols << " element " << i;
    }
  }
}

TEST(Isa, UnknownRobertaIsaValueIsAnErrorNamingTheAcceptedOnes) {
  for (const char* bad : {"avx512x", "AVX2", "sse", ""})
    roberta::test::expect_error([&] { roberta::kernels::parse_isa(bad); },
                                {"ROBERTA_ISA", "avx512bf16", "avx512", "avx2", "portable"});
  EXPECT_EQ(roberta::kernels::parse_isa("avx512"), Isa::kAvx512);
  EXPECT_EQ(roberta::kernels::parse_isa("portable"), Isa::kPortable);
  // The variable itself, as a user sets it: a typo is an error, not the portable kernel.
  const char* old = std::getenv("ROBERTA_ISA");
  const std::string saved = old ? old : "";
  setenv("ROBERTA_ISA", "avx512x", 1);
  roberta::test::expect_error([] { roberta::kernels::usable_isa(); }, {"avx512x", "avx512bf16", "portable"});
  if (old)
    setenv("ROBERTA_ISA", saved.c_str(), 1);
  else
    unsetenv("ROBERTA_ISA");
}

// Run by CTest with ROBERTA_ISA set to each level (and unset): the kernels must use exactly
// min(that level, what the CPU has) — for the fp32 GEMM and, separately, for the bf16 product.
// (Regression: ROBERTA_ISA=avx512 used to select the portable kernel, and any value disabled
// AVX512-BF16.)
TEST(Isa, KernelsUseTheLevelRobertaIsaAllows) {
  const char* env = std::getenv("ROBERTA_ISA");
  const Isa cpu = roberta::kernels::detected_isa();
  const Isa want = env && *env ? std::min(roberta::kernels::parse_isa(env), cpu) : cpu;
  std::printf("  ROBERTA_ISA=%s, CPU: %s, using: %s\n", env ? env : "(unset)", roberta::kernels::isa_name(cpu),
              roberta::kernels::isa_name(want));
  EXPECT_EQ(roberta::kernels::usable_isa(), want);
  const char* fp32 = want >= Isa::kAvx512 ? "avx512" : want >= Isa::kAvx2 ? "avx2" : "portable";
  EXPECT_STREQ(roberta::kernels::packed_gemm_isa(), fp32);
  EXPECT_EQ(roberta::kernels::has_bf16_instructions(), want >= Isa::kAvx512Bf16);
}

}  // namespace
