// The products through oneDNN's matmul (src/kernels/onednn_gemm.h) against float64 references of
// their rounded inputs, over shapes that hit every edge: rows around the 256-row band (one band,
// equal bands, a band of 1), columns not a multiple of the 128-column part or of 16, odd k (bf16
// pairs and int8 quads padded), a strided output, with and without bias, the fused activation,
// and two threads using one weight at once. Skipped (visibly) in a build without oneDNN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <utility>

#include "kernels/activations.h"
#include "kernels/isa.h"
#include "runtime/cpu.h"
#include "kernels/onednn_gemm.h"
#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"
#include "roberta/error.h"
#include "rows_done_check.h"

namespace {

using roberta::kernels::OneDnnWeight;
using roberta::kernels::Precision;

float round_bf16(float f) {
  const uint32_t bits = uint32_t{roberta::kernels::to_bf16(f)} << 16;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

const char* name(Precision p) { return p == Precision::kF32 ? "fp32" : p == Precision::kBF16 ? "bf16" : "int8"; }

class OneDnnGemm : public ::testing::TestWithParam<Precision> {
 protected:
  void SetUp() override {
    if (!roberta::kernels::onednn_built()) GTEST_SKIP() << "this build has no oneDNN (libdnnl-dev)";
    if (!roberta::kernels::onednn_supports(GetParam()))
      GTEST_SKIP() << "oneDNN cannot do " << name(GetParam()) << " correctly here (" << roberta::kernels::onednn_isa()
                   << "); the engine uses its own kernels for it";
  }
};

TEST_P(OneDnnGemm, MatchesFloat64ReferenceOfRoundedInputs) {
  const Precision p = GetParam();
  std::mt19937 rng(17);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::printf("  oneDNN on this CPU: %s\n", roberta::kernels::onednn_isa().c_str());
  for (size_t M : {1, 5, 16, 255, 256, 257, 600}) {
    for (size_t N : {1, 45, 128, 200, 768}) {
      for (size_t K : {1, 3, 64, 301, 768}) {
        if (M * N * K > 15'000'000) continue;
        std::vector<float> x(M * K), w(N * K), bias(N);
        for (auto& v : x) v = dist(rng);
        for (auto& v : w) v = dist(rng);
        for (auto& v : bias) v = dist(rng);
        const OneDnnWeight packed(w.data(), N, K, p);
        // The weight as oneDNN holds it, read back through oneDNN, is the rounding our own kernels use.
        const std::vector<float> wd = packed.dequantized();
        const roberta::kernels::PackedWeightInt8 own_int8(w.data(), N, K);
        for (size_t n = 0; n < N; ++n)
          for (size_t k = 0; k < K; ++k) {
            const float want = p == Precision::kF32    ? w[n * K + k]
                               : p == Precision::kBF16 ? round_bf16(w[n * K + k])
                                                       : own_int8.dequantized(n, k);
            ASSERT_EQ(wd[n * K + k], want) << name(p) << " n=" << n << " k=" << k;
          }
        std::vector<uint32_t> quads(M * ((K + 3) / 4)), pairs(M * ((K + 1) / 2));
        std::vector<float> xs(M);
        if (p == Precision::kInt8) roberta::kernels::quantize_rows(x.data(), M, K, quads.data(), xs.data());
        if (p == Precision::kBF16) roberta::kernels::to_bf16_pairs(x.data(), M, K, pairs.data());
        // A dense y (ldy = N) with enough rows takes oneDNN's whole-row path (the product written
        // straight into y); a strided one goes through the per-task tile. int8 and bf16 also from x
        // converted beforehand (as a previous product's rows_done does).
        for (const bool preconverted : {false, true})
          for (const bool with_bias : {false, true})
            for (const bool dense : {false, true}) {
              if (preconverted && p == Precision::kF32) continue;
              const size_t ldy = dense ? N : N + 3;
              std::vector<float> y(M * ldy, -7.0f);
              if (preconverted && p == Precision::kInt8)
                roberta::kernels::packed_linear(y.data(), ldy, roberta::kernels::QuantizedRows{quads.data(), xs.data()},
                                                packed, with_bias ? bias.data() : nullptr, M);
              else if (preconverted)
                roberta::kernels::packed_linear(y.data(), ldy, roberta::kernels::Bf16Rows{pairs.data()}, packed,
                                                with_bias ? bias.data() : nullptr, M);
              else
                roberta::kernels::packed_linear(y.data(), ldy, x.data(), packed, with_bias ? bias.data() : nullptr, M);
              double max_err = 0;
              for (size_t m = 0; m < M; ++m) {
                const auto* bytes = reinterpret_cast<const uint8_t*>(quads.data() + m * ((K + 3) / 4));
                for (size_t n = 0; n < N; ++n) {
                  double want = with_bias ? bias[n] : 0.0, scale = 0;
                  for (size_t k = 0; k < K; ++k) {
                    const double wk = wd[n * K + k];
                    if (p == Precision::kInt8) {
                      want += (static_cast<double>(bytes[k]) - 128.0) * xs[m] * wk;
                      scale += std::abs((static_cast<double>(bytes[k]) - 128.0) * xs[m] * wk);
                    } else {
                      const double xk = p == Precision::kBF16 ? round_bf16(x[m * K + k]) : x[m * K + k];
                      want += xk * wk;
                    }
                  }
                  // fp32 / bf16: summed in fp32, ~sqrt(K) roundings of unit terms; int8: exact int32
                  // sums, one float rounding of the dequantized value.
                  const double err = p == Precision::kInt8
                                         ? std::abs(want - y[m * ldy + n]) / (1.0 + std::abs(want))
                                         : std::abs(want - y[m * ldy + n]) / std::sqrt(static_cast<double>(K));
                  max_err = std::max(max_err, err);
                }
                for (size_t n = N; n < ldy; ++n) ASSERT_EQ(y[m * ldy + n], -7.0f) << "wrote past N";
              }
              EXPECT_LT(max_err, 1e-5) << name(p) << " M=" << M << " N=" << N << " K=" << K << " bias=" << with_bias
                                       << " dense=" << dense << " preconverted=" << preconverted;
            }
      }
    }
  }
}

// A row of x or of the weight holding an infinity or a NaN makes y not finite exactly where the
// float64 product of the unrounded values is not finite (int8: NaN there, quantize_weight_row's and
// quantize_rows' NaN scale), through oneDNN's whole-row path (dense y) and its per-task tile.
TEST_P(OneDnnGemm, NonFiniteValuesGiveNonFiniteOutputsWhereFloat64Does) {
  const Precision p = GetParam();
  const size_t M = 300, N = 130, K = 301;
  std::mt19937 rng(23);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(M * K), w(N * K);
  for (auto& v : x) v = dist(rng);
  for (auto& v : w) v = dist(rng);
  x[3 * K + 300] = std::numeric_limits<float>::quiet_NaN();
  x[100 * K] = std::numeric_limits<float>::infinity();
  x[299 * K + 64] = -std::numeric_limits<float>::infinity();
  w[0 * K + 17] = std::numeric_limits<float>::quiet_NaN();
  w[129 * K + 300] = -std::numeric_limits<float>::infinity();
  const OneDnnWeight packed(w.data(), N, K, p);
  for (const bool dense : {false, true}) {
    const size_t ldy = dense ? N : N + 3;
    std::vector<float> y(M * ldy, -7.0f);
    roberta::kernels::packed_linear(y.data(), ldy, x.data(), packed, nullptr, M);
    size_t not_finite = 0;
    for (size_t m = 0; m < M; ++m)
      for (size_t n = 0; n < N; ++n) {
        double want = 0;
        for (size_t k = 0; k < K; ++k) want += static_cast<double>(x[m * K + k]) * w[n * K + k];
        const float got = y[m * ldy + n];
        not_finite += !std::isfinite(want);
        ASSERT_EQ(std::isfinite(got), std::isfinite(want)) << name(p) << " " << m << "," << n << ": " << got;
        if (p == Precision::kInt8 && !std::isfinite(want)) {
          ASSERT_TRUE(std::isnan(got)) << m << "," << n;
        }
      }
    EXPECT_EQ(not_finite, 3 * N + 2 * (M - 3)) << "dense=" << dense;
  }
}

// The activation applied in the epilogue equals the activation applied afterwards.
TEST_P(OneDnnGemm, FusedActivationEqualsSeparatePass) {
  const Precision p = GetParam();
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  // N = 300 with a strided y: the per-task tile; N = 256 dense: the whole-row path.
  for (const auto& [N, ldy] : {std::pair<size_t, size_t>{300, 302}, {256, 256}}) {
    const size_t M = 300, K = 64;
    std::vector<float> x(M * K), w(N * K), bias(N);
    for (auto& v : x) v = dist(rng);
    for (auto& v : w) v = dist(rng);
    for (auto& v : bias) v = dist(rng);
    const OneDnnWeight packed(w.data(), N, K, p);
    for (const auto act : {roberta::kernels::Activation::kGelu, roberta::kernels::Activation::kTanh}) {
      std::vector<float> plain(M * ldy, -7.0f), fused(M * ldy, -7.0f);
      roberta::kernels::packed_linear(plain.data(), ldy, x.data(), packed, bias.data(), M);
      roberta::kernels::packed_linear(fused.data(), ldy, x.data(), packed, bias.data(), M, act);
      std::vector<float> separate = plain;
      roberta::kernels::bias_activation(separate.data(), nullptr, M, ldy, act);
      for (size_t m = 0; m < M; ++m) {
        for (size_t n = 0; n < N; ++n) {
          ASSERT_EQ(fused[m * ldy + n], separate[m * ldy + n]) << m << "," << n;
          ASSERT_NEAR(fused[m * ldy + n], roberta::kernels::activate(act, plain[m * ldy + n]), 1e-6);
        }
        if (ldy > N) {
          ASSERT_EQ(fused[m * ldy + N], -7.0f) << "wrote past N";
        }
      }
    }
  }
}

// tiles_done and rows_done see each element / row once, final (activation applied), on the
// whole-row path (many rows, y dense, N a multiple of 128: inside the tasks) and the tile path
// (rows_done after the product), from fp32 x and, for bf16, from x rounded beforehand.
TEST_P(OneDnnGemm, RowsDoneAndTilesDoneSeeFinalValuesOnce) {
  const Precision p = GetParam();
  std::mt19937 rng(13);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t N = 256, K = 96;
  std::vector<float> w(N * K);
  for (auto& v : w) v = dist(rng);
  SCOPED_TRACE(name(p));
  const OneDnnWeight packed(w.data(), N, K, p);
  expect_rows_done_sees_final_rows(packed, N, K, [](auto&&... args) { roberta::kernels::packed_linear(args...); });
  if (p == Precision::kBF16)
    expect_rows_done_sees_final_rows(packed, N, K,
                                     [K](float* y, size_t ldy, const float* x, const auto& weight, const float* bias,
                                         size_t M, auto act, auto rows_done, auto tiles_done) {
                                       std::vector<uint32_t> pairs(M * ((K + 1) / 2));
                                       roberta::kernels::to_bf16_pairs(x, M, K, pairs.data());
                                       roberta::kernels::packed_linear(y, ldy, roberta::kernels::Bf16Rows{pairs.data()},
                                                                       weight, bias, M, act, rows_done, tiles_done);
                                     });
}

// Two threads multiplying with one weight at once (the server's and the library's case): both get
// the single-threaded answer.
TEST_P(OneDnnGemm, TwoThreadsAtOnceGetTheSameAnswer) {
  const Precision p = GetParam();
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t N = 384, K = 256;
  std::vector<float> w(N * K), bias(N);
  for (auto& v : w) v = dist(rng);
  for (auto& v : bias) v = dist(rng);
  const OneDnnWeight packed(w.data(), N, K, p);
  std::vector<std::vector<float>> xs, want;
  for (size_t M : {7, 300}) {
    xs.emplace_back(M * K);
    for (auto& v : xs.back()) v = dist(rng);
    want.emplace_back(M * N);
    roberta::kernels::packed_linear(want.back().data(), N, xs.back().data(), packed, bias.data(), M);
  }
  std::vector<std::vector<float>> got(2);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      got[t].resize(want[t].size());
      for (int round = 0; round < 20; ++round)
        roberta::kernels::packed_linear(got[t].data(), N, xs[t].data(), packed, bias.data(), xs[t].size() / K);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(got[0], want[0]);
  EXPECT_EQ(got[1], want[1]);
}

// oneDNN's reference (slow, generic) code never runs these products: every band height gets an
// optimised implementation on this CPU.
TEST_P(OneDnnGemm, UsesAnOptimisedImplementationForEveryBandHeight) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  const size_t N = 768, K = 768;
  std::vector<float> w(N * K);
  for (auto& v : w) v = dist(rng);
  const OneDnnWeight packed(w.data(), N, K, GetParam());
  for (size_t rows : {1, 16, 100, 256}) {
    const std::string impl = roberta::kernels::onednn_implementation(packed, rows);
    std::printf("  %s, %zu rows: %s\n", name(GetParam()), rows, impl.c_str());
    EXPECT_EQ(impl.find("ref"), std::string::npos) << impl;
  }
}

// On a CPU with AMX, oneDNN's bf16 and int8 products run on the tiles (the permission request
// worked and the packed layout is AMX's) for bands of 16 rows and more; elsewhere this is skipped,
// visibly: the AMX products have then not run at all. (A single row oneDNN 2.6 multiplies with its
// AVX-512 kernels even on an AMX Xeon, brg:avx512_core_bf16 / brg:avx512_core_vnni: its choice.)
TEST_P(OneDnnGemm, RunsOnAmxTilesWhereTheCpuHasThem) {
  const Precision p = GetParam();
  if (p == Precision::kF32) GTEST_SKIP() << "fp32 has no AMX product";
  if (!roberta::kernels::cpu_has_amx(p))
    GTEST_SKIP() << "no AMX for " << name(p) << " on this CPU: oneDNN's AMX products are untested here";
  if (roberta::kernels::onednn_isa() != "avx512_core_amx")
    GTEST_SKIP() << "oneDNN held below AMX here (DNNL_MAX_CPU_ISA): " << roberta::kernels::onednn_isa();
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  const size_t N = 768, K = 768;
  std::vector<float> w(N * K);
  for (auto& v : w) v = dist(rng);
  const OneDnnWeight packed(w.data(), N, K, p);
  for (size_t rows : {16, 100, 256}) {
    const std::string impl = roberta::kernels::onednn_implementation(packed, rows);
    std::printf("  %s, %zu rows: %s\n", name(p), rows, impl.c_str());
    EXPECT_NE(impl.find("amx"), std::string::npos) << impl;
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, OneDnnGemm, ::testing::Values(Precision::kF32, Precision::kBF16, Precision::kInt8),
                         [](const auto& info) { return std::string(name(info.param)); });

// This process's plan with ROBERTA_GEMM as `gemm`.
roberta::runtime::KernelPlan plan_with(roberta::runtime::Settings::Gemm gemm) {
  roberta::runtime::Settings settings = roberta::runtime::from_env();
  settings.gemm = gemm;
  return roberta::runtime::resolve(roberta::runtime::detect(), settings);
}

using Gemm = roberta::runtime::Settings::Gemm;

// Where oneDNN cannot do a precision correctly, nothing sends it there, not even ROBERTA_GEMM=onednn,
// and a weight for it is refused with an error rather than computed wrongly.
TEST(OneDnnGemmChoice, APrecisionOneDnnCannotDoStaysOnOurKernels) {
  if (!roberta::kernels::onednn_built()) GTEST_SKIP() << "this build has no oneDNN (libdnnl-dev)";
  const auto onednn = plan_with(Gemm::kOneDnn);
  std::printf("  oneDNN on this CPU: %s\n", roberta::kernels::onednn_isa().c_str());
  const std::vector<float> w(64 * 64, 0.5f);
  for (const Precision p : {Precision::kF32, Precision::kBF16, Precision::kInt8}) {
    std::printf("  %s: %s\n", name(p), roberta::kernels::onednn_supports(p) ? "oneDNN" : "ours");
    EXPECT_EQ(roberta::kernels::use_onednn(p, onednn), roberta::kernels::onednn_supports(p)) << name(p);
    if (!roberta::kernels::onednn_supports(p)) {
      EXPECT_THROW(OneDnnWeight(w.data(), 64, 64, p), roberta::Error) << name(p);
    }
  }
  EXPECT_TRUE(roberta::kernels::onednn_supports(Precision::kF32));
}

// The default, from measurements (use_onednn, kernels/onednn_gemm.h): fp32 and int8 never go to oneDNN,
// and nothing does on a CPU whose AMX tiles our kernels use (faster than oneDNN's on a Xeon); bf16
// does only where the CPU model's row says so and oneDNN multiplies it natively without AMX
// (AVX512-BF16, as on the Zen 4 and 5), and not under a ROBERTA_ISA cap.
TEST(OneDnnGemmChoice, DefaultIsOursExceptBf16WithoutAmx) {
  const auto plan = plan_with(Gemm::kDefault);
  EXPECT_FALSE(roberta::kernels::use_onednn(Precision::kF32, plan));
  EXPECT_FALSE(roberta::kernels::use_onednn(Precision::kInt8, plan));
  if (plan.isa >= roberta::kernels::Isa::kAmx) {
    EXPECT_FALSE(roberta::kernels::use_onednn(Precision::kBF16, plan)) << "our AMX products are the faster ones";
  } else if (roberta::kernels::onednn_built()) {
    EXPECT_EQ(roberta::kernels::use_onednn(Precision::kBF16, plan),
              plan.isa == plan.detected && roberta::runtime::this_cpu().choices->bf16_onednn &&
                  roberta::kernels::onednn_isa() == "avx512_core_bf16");
  }
  std::printf("  bf16 here: %s\n", roberta::kernels::use_onednn(Precision::kBF16, plan) ? "oneDNN" : "ours");
}

TEST(OneDnnGemmChoice, RobertaGemmDecidesEveryChoice) {
  EXPECT_FALSE(roberta::kernels::use_onednn(Precision::kBF16, plan_with(Gemm::kOwn)));
  EXPECT_FALSE(roberta::kernels::use_onednn(Precision::kF32, plan_with(Gemm::kOwn)));
  if (roberta::kernels::onednn_built())
    EXPECT_TRUE(roberta::kernels::use_onednn(Precision::kF32, plan_with(Gemm::kOneDnn)));
  else
    EXPECT_THROW(roberta::kernels::use_onednn(Precision::kF32, plan_with(Gemm::kOneDnn)), roberta::Error);
}

}  // namespace
