// The kernels' activations against float64 closed forms, and config.json's names for them.
#include <gtest/gtest.h>

#include <cmath>

#include "activation_names.h"
#include "kernels/activations.h"
#include "test_util.h"

namespace {

using roberta::kernels::Activation;
using roberta::test::expect_error;

// Float64 closed forms, written from Hugging Face's definitions.
double reference(Activation a, double x) {
  const double pi = 3.14159265358979323846;
  switch (a) {
    case Activation::kGelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::kGeluTanh: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / pi) * (x + 0.044715 * x * x * x)));
    case Activation::kGelu10: return std::clamp(0.5 * x * (1 + std::erf(x / std::sqrt(2.0))), -10.0, 10.0);
    case Activation::kQuickGelu: return x / (1 + std::exp(-1.702 * x));
    case Activation::kLaplace: return 0.5 * (1 + std::erf((x - 0.707107) / (0.282095 * std::sqrt(2.0))));
    case Activation::kRelu: return std::max(x, 0.0);
    case Activation::kRelu2: return x > 0 ? x * x : 0;
    case Activation::kRelu6: return std::clamp(x, 0.0, 6.0);
    case Activation::kLeakyRelu: return x > 0 ? x : 0.01 * x;
    case Activation::kSilu: return x / (1 + std::exp(-x));
    case Activation::kTanh: return std::tanh(x);
    case Activation::kSigmoid: return 1 / (1 + std::exp(-x));
    case Activation::kMish: return x * std::tanh(std::log1p(std::exp(x)));
    case Activation::kLinear: return x;
  }
  return NAN;
}

struct ActivationCase {
  const char* name;
  double tolerance;  // relative to max(1, |f(x)|)
};

class ActivationTest : public ::testing::TestWithParam<ActivationCase> {};

TEST_P(ActivationTest, MatchesFloat64ClosedForm) {
  const Activation a = roberta::activation_from_name(GetParam().name);
  std::vector<float> xs;
  for (double x = -30; x <= 30; x += 0.0037) xs.push_back(static_cast<float>(x));
  for (float x : {0.0f, -0.0f, 1e-8f, -1e-8f, 100.0f, -100.0f}) xs.push_back(x);
  std::vector<float> ys = xs;
  roberta::kernels::bias_activation(ys.data(), nullptr, 1, ys.size(), a);
  double max_err = 0, worst_x = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = reference(a, xs[i]);
    const double err = std::abs(ys[i] - want) / std::max(1.0, std::abs(want));
    if (err > max_err) max_err = err, worst_x = xs[i];
    ASSERT_TRUE(std::isfinite(ys[i])) << GetParam().name << " at x = " << xs[i];
  }
  RecordProperty("max_error", std::to_string(max_err));
  std::printf("  %-18s max error %.3g at x = %g over [-30, 30]\n", GetParam().name, max_err, worst_x);
  EXPECT_LE(max_err, GetParam().tolerance) << GetParam().name << " worst at x = " << worst_x;
}

INSTANTIATE_TEST_SUITE_P(
    HuggingFaceNames, ActivationTest,
    ::testing::Values(ActivationCase{"gelu", 1e-6}, ActivationCase{"gelu_python", 1e-6}, ActivationCase{"gelu_new", 1e-6},
                      ActivationCase{"gelu_pytorch_tanh", 1e-6}, ActivationCase{"gelu_fast", 1e-6},
                      ActivationCase{"gelu_accurate", 1e-6}, ActivationCase{"gelu_10", 1e-6},
                      ActivationCase{"quick_gelu", 1e-6}, ActivationCase{"laplace", 1e-6}, ActivationCase{"relu", 0},
                      ActivationCase{"relu2", 1e-6}, ActivationCase{"relu6", 0}, ActivationCase{"leaky_relu", 1e-7},
                      ActivationCase{"silu", 1e-6}, ActivationCase{"swish", 1e-6}, ActivationCase{"tanh", 1e-6},
                      ActivationCase{"sigmoid", 1e-6}, ActivationCase{"mish", 1e-6}, ActivationCase{"linear", 0}),
    [](const auto& info) { return std::string(info.param.name); });

// NaN in, NaN out, as PyTorch's activations give (torch 1.13: relu, relu6, leaky_relu, silu, tanh,
// sigmoid, mish, gelu both ways, clip), in the vectorised loop and its tail (NaN at 0, 17, 36 of 37
// values), the other values unchanged in kind (finite).
TEST_P(ActivationTest, NaNGivesNaN) {
  const Activation a = roberta::activation_from_name(GetParam().name);
  std::vector<float> ys(37);
  for (size_t i = 0; i < ys.size(); ++i) ys[i] = -2.0f + 0.1f * static_cast<float>(i);
  for (size_t i : {0, 17, 36}) ys[i] = NAN;
  roberta::kernels::bias_activation(ys.data(), nullptr, 1, ys.size(), a);
  for (size_t i = 0; i < ys.size(); ++i)
    EXPECT_EQ(std::isnan(ys[i]), i == 0 || i == 17 || i == 36) << GetParam().name << " at " << i << ": " << ys[i];
}

TEST(Activation, GeluAndTanhApproximationDiffer) {
  // The parity tests rely on this: a tanh GELU in place of erf GELU must be visible.
  EXPECT_GT(std::abs(roberta::kernels::activate(Activation::kGelu, -2.5f) -
                     roberta::kernels::activate(Activation::kGeluTanh, -2.5f)),
            1e-4);
}

TEST(Activation, UnknownNameIsAnError) {
  expect_error([] { roberta::activation_from_name("prelu"); }, {"prelu", "not supported"});
  expect_error([] { roberta::activation_from_name("gelu2"); }, {"gelu2"});
}

}  // namespace
