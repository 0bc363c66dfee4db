// Unit tests of the engine's parts: activations, config validation, safetensors, npy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "kernels/activations.h"
#include "roberta/roberta.h"
#include "roberta/dev/npy.h"
#include "roberta/dev/weights.h"
#include "test_util.h"

namespace {

using roberta::Activation;
using roberta::test::expect_error;
using roberta::test::TempDir;

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
  const Activation a = roberta::parse_activation(GetParam().name);
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

TEST(Activation, GeluAndTanhApproximationDiffer) {
  // The parity tests rely on this: a tanh GELU in place of erf GELU must be visible.
  EXPECT_GT(std::abs(roberta::kernels::activate(Activation::kGelu, -2.5f) -
                     roberta::kernels::activate(Activation::kGeluTanh, -2.5f)),
            1e-4);
}

TEST(Activation, UnknownNameIsAnError) {
  expect_error([] { roberta::parse_activation("prelu"); }, {"prelu", "not supported"});
  expect_error([] { roberta::parse_activation("gelu2"); }, {"gelu2"});
}

// ---------------------------------------------------------------- config

nlohmann::json base_config() {
  return {{"model_type", "roberta"}, {"vocab_size", 100}, {"hidden_size", 32}, {"num_hidden_layers", 2},
          {"num_attention_heads", 4}, {"intermediate_size", 64}, {"max_position_embeddings", 66},
          {"type_vocab_size", 1}, {"layer_norm_eps", 1e-5}, {"pad_token_id", 1}, {"hidden_act", "gelu"}};
}

roberta::ModelConfig parse(const nlohmann::json& j) { return roberta::ModelConfig::from_json_text(j.dump(), "config.json"); }

TEST(Config, ReadsEveryField) {
  auto j = base_config();
  j["hidden_act"] = "gelu_new";
  const auto c = parse(j);
  EXPECT_EQ(c.vocab_size, 100);
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.head_size(), 8);
  EXPECT_EQ(c.intermediate_size, 64);
  EXPECT_EQ(c.max_sequence_length(), 64);
  EXPECT_EQ(c.activation, Activation::kGeluTanh);
  EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-5);
}

TEST(Config, BadValuesNameTheField) {
  const auto with = [](const char* key, nlohmann::json value) {
    auto j = base_config();
    if (value.is_null())
      j.erase(key);
    else
      j[key] = value;
    return j;
  };
  expect_error([&] { parse(with("hidden_size", nullptr)); }, {"config.json", "missing", "hidden_size"});
  expect_error([&] { parse(with("hidden_size", 0)); }, {"hidden_size", "outside"});
  expect_error([&] { parse(with("num_hidden_layers", -3)); }, {"num_hidden_layers", "-3"});
  expect_error([&] { parse(with("vocab_size", 1e12)); }, {"vocab_size"});
  expect_error([&] { parse(with("intermediate_size", 64.5)); }, {"intermediate_size", "integer"});
  expect_error([&] { parse(with("num_attention_heads", "4")); }, {"num_attention_heads", "integer"});
  expect_error([&] { parse(with("num_attention_heads", 5)); }, {"not divisible", "num_attention_heads"});
  expect_error([&] { parse(with("layer_norm_eps", -1)); }, {"layer_norm_eps"});
  expect_error([&] { parse(with("hidden_act", "prelu")); }, {"hidden_act", "prelu"});
  expect_error([&] { parse(with("position_embedding_type", "relative_key")); }, {"position_embedding_type", "relative_key"});
  expect_error([&] { parse(with("model_type", "gpt2")); }, {"model_type", "gpt2"});
  expect_error([&] { parse(with("pad_token_id", 100)); }, {"pad_token_id"});
  expect_error([&] { roberta::ModelConfig::from_json_text("{\"vocab_size\": ", "config.json"); }, {"config.json", "invalid JSON"});
  // Found by fuzzing: a number too large for a double is a JSON error, not a crash.
  expect_error([&] { roberta::ModelConfig::from_json_text("{\"layer_norm_eps\": 1e412}", "config.json"); },
               {"config.json", "invalid JSON"});
}

// ---------------------------------------------------------------- safetensors

struct StTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  size_t begin, end;
};

void write_safetensors(const std::filesystem::path& path, const std::vector<StTensor>& tensors, const std::string& data,
                       std::optional<uint64_t> header_len_override = std::nullopt, std::string raw_header = "") {
  if (raw_header.empty()) {
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    for (const auto& t : tensors) h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
    raw_header = h.dump();
  }
  while (raw_header.size() % 8) raw_header += ' ';
  const uint64_t len = header_len_override.value_or(raw_header.size());
  std::string file(8, '\0');
  std::memcpy(file.data(), &len, 8);
  roberta::test::write_text(path, file + raw_header + data);
}

TEST(SafeTensors, ReadsF32InPlaceAndConvertsF16AndBF16) {
  TempDir dir;
  const float f32[2] = {1.5f, -2.25f};
  const uint16_t f16[3] = {0x3C00, 0xC000, 0x0001};  // 1, -2, smallest subnormal
  const uint16_t bf16[2] = {0x3F80, 0xC0A0};         // 1, -5
  std::string data(reinterpret_cast<const char*>(f32), 8);
  data += std::string(reinterpret_cast<const char*>(f16), 6);
  data += std::string(reinterpret_cast<const char*>(bf16), 4);
  write_safetensors(dir / "m.safetensors",
                    {{"a", "F32", {2}, 0, 8}, {"b", "F16", {3}, 8, 14}, {"c", "BF16", {1, 2}, 14, 18}}, data);
  const auto store = roberta::WeightStore::open_file(dir / "m.safetensors");
  const auto* a = store.find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(roberta::WeightStore::f32_in_place(*a), nullptr);
  EXPECT_EQ(roberta::WeightStore::f32_in_place(*a)[1], -2.25f);
  const auto b = store.to_float(*store.find("b"));
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], -2.0f);
  EXPECT_EQ(b[2], std::ldexp(1.0f, -24));
  const auto c = store.to_float(*store.find("c"));
  EXPECT_EQ(c[0], 1.0f);
  EXPECT_EQ(c[1], -5.0f);
}

TEST(SafeTensors, HostileHeadersGiveClearErrors) {
  TempDir dir;
  const std::string data(16, '\0');
  const auto open = [&] { roberta::WeightStore::open_file(dir / "bad.safetensors"); };
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {2}, 0, 8}}, data, uint64_t{1} << 40);
  expect_error(open, {"bad.safetensors", "header length", "larger than the file"});
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {8}, 0, 32}}, data);
  expect_error(open, {"\"a\"", "past the end"});
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {2}, 0, 8}, {"b", "F32", {2}, 4, 12}}, data);
  expect_error(open, {"overlap"});
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {3}, 0, 8}}, data);
  expect_error(open, {"\"a\"", "8 bytes", "need 12"});
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {2}, 8, 0}}, data);
  expect_error(open, {"reversed"});
  write_safetensors(dir / "bad.safetensors", {{"a", "Q4", {2}, 0, 8}}, data);
  expect_error(open, {"dtype", "Q4"});
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {-2}, 0, 8}}, data);
  expect_error(open, {"shape", "negative"});
  write_safetensors(dir / "bad.safetensors", {}, data, std::nullopt,
                    R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})");
  expect_error(open, {"\"a\"", "twice"});
  write_safetensors(dir / "bad.safetensors", {}, data, std::nullopt, "{not json");
  expect_error(open, {"invalid JSON"});
  roberta::test::write_text(dir / "bad.safetensors", "abc");
  expect_error(open, {"too small"});
}

// ---------------------------------------------------------------- npy

TEST(Npy, RoundTripsFloatAndInt) {
  TempDir dir;
  const std::vector<float> f = {1.0f, -2.5f, 3.25f, 0.0f, 1e-30f, 7.0f};
  roberta::write_npy(dir / "f.npy", {2, 3}, f);
  const auto a = roberta::read_npy(dir / "f.npy");
  EXPECT_EQ(a.dtype, "<f4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.as_float(), f);
  const std::vector<int64_t> i = {0, 31414, 232, 2};
  roberta::write_npy(dir / "i.npy", {4}, i);
  EXPECT_EQ(roberta::read_npy(dir / "i.npy").as_int64(), i);
  // Found by fuzzing: an empty array must not pass a null pointer to memcpy.
  roberta::write_npy(dir / "empty.npy", {0, 3}, std::vector<float>{});
  EXPECT_TRUE(roberta::read_npy(dir / "empty.npy").as_float().empty());
}

TEST(Npy, TruncatedOrBadFilesGiveClearErrors) {
  TempDir dir;
  roberta::write_npy(dir / "f.npy", {2, 3}, std::vector<float>(6, 1.0f));
  std::ifstream in(dir / "f.npy", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  roberta::test::write_text(dir / "t.npy", bytes.substr(0, bytes.size() - 4));
  expect_error([&] { roberta::read_npy(dir / "t.npy"); }, {"t.npy", "needs 24"});
  roberta::test::write_text(dir / "x.npy", "not numpy");
  expect_error([&] { roberta::read_npy(dir / "x.npy"); }, {"x.npy", "not a .npy"});
}

}  // namespace
