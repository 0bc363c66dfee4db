// The model and the pipelines built on it: construction checks, and memory after large batches.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "random_model.h"
#include "roberta/dev/weights.h"
#include "roberta/pipelines.h"
#include "test_util.h"
#include "util/scratch.h"

namespace {

const std::string kSmall = std::string(ROBERTA_TEST_DATA) + "/fixtures/small/model";
const std::string kDemo = ROBERTA_DEMO_MODEL;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Regression: FillMask(Model, Tokenizer) checked nothing, and operator() dereferenced the
// missing <mask> id. The constructor now checks what load() checks.
TEST(FillMask, ConstructorRefusesATokenizerWithoutMask) {
  auto doc = nlohmann::json::parse(read(kDemo + "/tokenizer.json"));
  auto& added = doc["added_tokens"];
  for (auto it = added.begin(); it != added.end();)
    it = (*it)["content"] == "<mask>" ? added.erase(it) : std::next(it);
  doc["model"]["vocab"].erase("<mask>");
  const roberta::Tokenizer no_mask = roberta::Tokenizer::from_tokenizer_json_text(doc.dump(), "no-mask/tokenizer.json");
  ASSERT_FALSE(no_mask.mask_id().has_value());
  const roberta::Model model = roberta::Model::load(kDemo);
  try {
    roberta::FillMask fill(model, no_mask);
    FAIL() << "expected roberta::Error";
  } catch (const roberta::Error& e) {
    EXPECT_NE(std::string(e.what()).find("<mask>"), std::string::npos) << e.what();
    EXPECT_EQ(e.kind(), roberta::ErrorKind::kInvalidModel);
  }
  EXPECT_NO_THROW(roberta::FillMask(model, roberta::Tokenizer::from_dir(kDemo)));
}

// Logits holding NaN (a model whose outputs are NaN): the top k in a strict order, the NaN ids first
// (torch.topk puts NaN above every number), ties by lower id, then the highest logits; every score
// NaN, as softmax over a row with a NaN is NaN. (A comparator that is not a strict weak ordering,
// `a > b` with NaN, is undefined behaviour in std::partial_sort.)
TEST(FillMask, NaNLogitsComeFirstInAStrictOrder) {
  const roberta::FillMask fill = roberta::FillMask::load(kDemo);
  const auto prepared = fill.prepare("A <mask> day.");
  const size_t V = static_cast<size_t>(fill.model().config().vocab_size);
  roberta::Matrix logits(1, V);
  for (size_t v = 0; v < V; ++v) logits.data[v] = -static_cast<float>(v % 1000) / 100.0f;
  logits.data[7] = logits.data[3] = NAN;
  roberta::FillMaskOptions options;
  options.top_k = 4;
  const auto result = fill.finish(prepared, logits, options);
  ASSERT_EQ(result.size(), 1u);
  ASSERT_EQ(result[0].size(), 4u);
  const int32_t want[] = {3, 7, 0, 1000};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(result[0][i].token, want[i]) << i;
    EXPECT_TRUE(std::isnan(result[0][i].score)) << i;
  }
}

// tokenizer_config.json's clean_up_tokenization_spaces false: transformers' decode then leaves
// " ," and " n't" as they are, in the sequence (the user's own text) and in token_str; true or
// unset: cleaned up ("Hello, I don't").
TEST(FillMask, CleanUpTokenizationSpacesAsTokenizerConfigSays) {
  roberta::test::TempDir dir;
  for (const char* name : {"keep", "clean", "unset"}) {
    std::filesystem::create_directories(dir / name);
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
      std::filesystem::copy_file(std::filesystem::path(kDemo) / f, dir / name / f);
  }
  roberta::test::write_text(dir / "keep" / "tokenizer_config.json", R"({"clean_up_tokenization_spaces": false})");
  roberta::test::write_text(dir / "clean" / "tokenizer_config.json", R"({"clean_up_tokenization_spaces": true})");
  const std::string text = "Hello , I do n't know <mask> !";
  roberta::FillMaskOptions dot;
  dot.targets = {" ."};
  const auto keep = roberta::FillMask::load(dir / "keep");
  EXPECT_EQ(keep(text)[0][0].sequence.rfind("Hello , I do n't know", 0), 0u) << keep(text)[0][0].sequence;
  EXPECT_EQ(keep(text, dot)[0][0].token_str, " .");
  for (const char* name : {"clean", "unset"}) {
    const auto clean = roberta::FillMask::load(dir / name);
    EXPECT_EQ(clean(text)[0][0].sequence.rfind("Hello, I don't know", 0), 0u) << clean(text)[0][0].sequence;
    EXPECT_EQ(clean(text, dot)[0][0].token_str, ".");
  }
}

// A checkpoint with more layers than config.json's num_hidden_layers loads its first layers, as
// transformers does, and says so through the warning handler (an empty one drops the warning).
TEST(Model, LayersBeyondNumHiddenLayersAreAWarning) {
  roberta::test::TempDir dir;
  std::filesystem::create_directories(dir / "cut");
  for (const char* f : {"model.safetensors", "tokenizer.json"})
    std::filesystem::copy_file(std::filesystem::path(kDemo) / f, dir / "cut" / f);
  auto config = nlohmann::json::parse(read(kDemo + "/config.json"));
  const int layers = config["num_hidden_layers"].get<int>();
  config["num_hidden_layers"] = layers - 2;
  roberta::test::write_text(dir / "cut" / "config.json", config.dump());
  std::vector<std::string> warnings;
  roberta::set_warning_handler([&warnings](const std::string& m) { warnings.push_back(m); });
  const roberta::Model model = roberta::Model::load(dir / "cut");
  roberta::set_warning_handler({});
  EXPECT_NO_THROW(roberta::Model::load(dir / "cut"));  // dropped, not called
  roberta::set_warning_handler([](const std::string& m) { std::cerr << ("warning: " + m + "\n"); });
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("num_hidden_layers = " + std::to_string(layers - 2)), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("encoder.layer." + std::to_string(layers - 2) + " to " + std::to_string(layers - 1)),
            std::string::npos)
      << warnings[0];
  EXPECT_EQ(model.config().num_hidden_layers, layers - 2);
}

// A checkpoint holding a NaN (one F16 value, row 0 column 5, of layer 1's intermediate weight, or
// of its query weight): fp32, bf16 and int8 all give NaN for every value of the last hidden state,
// as PyTorch does (tools/dump_reference.py on such a copy of the demo model: all NaN): the NaN
// reaches each token's feed-forward output, or every score of head 0 and so its softmax, then the
// residual and LayerNorm. A NaN in the embedding of id 3141, which only the second sequence holds:
// that sequence's rows NaN, the first's finite (sequences attend only to themselves, in PyTorch
// too). Each loaded model warns once, naming where the NaN is first (sequence, token) and the
// tensor with its count and position; the demo model itself gives no warning.
TEST(Model, NonFiniteOutputsWarnOnceNamingTheCheckpointsTensor) {
  const std::string original = read(kDemo + "/model.safetensors");
  uint64_t header_len;
  std::memcpy(&header_len, original.data(), 8);
  const auto header = nlohmann::json::parse(original.substr(8, header_len));
  const roberta::Batch batch = roberta::Batch::from_sequences({{0, 713, 16, 10, 2}, {0, 3141, 2}});
  std::vector<std::string> warnings;
  roberta::set_warning_handler([&warnings](const std::string& m) { warnings.push_back(m); });
  struct Restore {  // the default handler back, also when an assertion returns early
    ~Restore() {
      roberta::set_warning_handler([](const std::string& m) { std::cerr << ("warning: " + m + "\n"); });
    }
  } restore;
  struct Case {
    std::string name;
    size_t row;               // the NaN at [row, 5]
    size_t first_nan_row;     // of the batch's 8 tokens: the rows from it on are NaN, those before finite
    std::string where, at;
  };
  const Case cases[] = {
      {"roberta.encoder.layer.1.intermediate.dense.weight", 0, 0, "sequence 0 token 0", "[0, 5]"},
      {"roberta.encoder.layer.1.attention.self.query.weight", 0, 0, "sequence 0 token 0", "[0, 5]"},
      {"roberta.embeddings.word_embeddings.weight", 3141, 5, "sequence 1 token 0", "[3141, 5]"}};
  for (const auto& [name, nan_row, first_nan_row, where, nan_at] : cases) {
    roberta::test::TempDir dir;
    std::filesystem::create_directories(dir / "nan");
    for (const char* f : {"config.json", "tokenizer.json"})
      std::filesystem::copy_file(std::filesystem::path(kDemo) / f, dir / "nan" / f);
    ASSERT_EQ(header.at(name).at("dtype"), "F16");
    std::string file = original;
    const size_t cols = header.at(name).at("shape")[1].get<size_t>();
    const size_t at = 8 + header_len + header.at(name).at("data_offsets")[0].get<size_t>() + 2 * (nan_row * cols + 5);
    const uint16_t nan16 = 0x7E00;
    std::memcpy(file.data() + at, &nan16, 2);
    roberta::test::write_text(dir / "nan" / "model.safetensors", file);
    for (const auto type : {roberta::WeightType::kF32, roberta::WeightType::kBF16, roberta::WeightType::kInt8}) {
      SCOPED_TRACE(name + ", weight type " + std::to_string(static_cast<int>(type)));
      warnings.clear();
      const roberta::Model model = roberta::Model::load(dir / "nan", {.weights = type});
      for (int pass = 0; pass < 2; ++pass) {
        const roberta::Outputs out = model.forward(batch);
        const roberta::Matrix& h = out.last_hidden_state;
        ASSERT_EQ(h.rows, 8u);
        for (size_t r = 0; r < h.rows; ++r)
          for (size_t c = 0; c < h.cols; ++c)
            ASSERT_EQ(std::isnan(h.row(r)[c]), r >= first_nan_row) << "row " << r << " column " << c;
      }
      ASSERT_EQ(warnings.size(), 1u);
      const std::vector<std::string> parts = {"NaN or infinite values", where, "\"" + name + "\"",
                                              "holds 1 such value (first at " + nan_at + ")", "once per loaded model"};
      for (const std::string& part : parts)
        EXPECT_NE(warnings[0].find(part), std::string::npos) << part << " in: " << warnings[0];
    }
  }
  warnings.clear();
  const roberta::Model demo = roberta::Model::load(kDemo);
  demo.forward(batch, {.logits = true});
  EXPECT_TRUE(warnings.empty()) << warnings[0];
}

size_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  size_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

// Regression: the forward pass kept its per-thread buffers at their largest size for the thread's
// life (one 32 x 512-token batch of roberta-base pinned ~450 MB per calling thread). After a large
// batch, resident memory must come back to within the bound of util/scratch.h (8 MiB per buffer).
TEST(Model, MemoryReturnsToABoundAfterALargeBatch) {
  const roberta::Model model = roberta::Model::load(kSmall);
  roberta::Batch small, large;
  std::vector<int32_t> seq(64);
  for (size_t i = 0; i < seq.size(); ++i) seq[i] = static_cast<int32_t>(3 + i % 200);
  small.add_sequence(seq);
  // 268,800 tokens (~300 MB of buffers): even the smallest scratch buffer, (tokens, hidden), is
  // larger than what a thread keeps between calls.
  for (int b = 0; b < 4200; ++b) large.add_sequence(seq);
  ASSERT_GT(large.num_tokens() * static_cast<size_t>(model.config().hidden_size) * sizeof(float),
            roberta::util::kScratchKeepBytes);
  model.forward(small);
  const size_t before = resident_bytes();
  EXPECT_EQ(model.forward(large).last_hidden_state.rows, large.num_tokens());
  const size_t after = resident_bytes();
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  const size_t peak = static_cast<size_t>(usage.ru_maxrss) * 1024;
  std::printf("  resident: %.1f MB before, peak %.1f MB, %.1f MB after\n", before / 1e6, peak / 1e6, after / 1e6);
  EXPECT_GT(peak, before + (100u << 20)) << "the large batch should have needed memory";
  EXPECT_LT(after, before + (40u << 20));
}

}  // namespace

// The MLM decoder (V x H, the model's largest matrix) is packed at the first pass that asks for
// logits, not at load: a model used to embed never holds the copy. The tied word embeddings, whose
// mapped pages are dropped once it is packed, still give the same hidden states after, and the
// logits are those of the fp32 product over the stored matrix (float64 reference).
TEST(Model, MlmDecoderPackedAtTheFirstLogitsItsEmbeddingsUnchanged) {
  roberta::test::TempDir dir;
  roberta::test::write_random_model(dir.path(), "mlm", {}, {16, 2, 32, 1, "absolute"});
  const roberta::Model model = roberta::Model::load(dir.path());
  const size_t V = static_cast<size_t>(model.config().vocab_size), H = 16;
  const roberta::Batch batch = roberta::Batch::from_sequences({{0, 31414, 232, 50264, 2}, {0, 50000, 2}});
  const size_t loaded = model.weight_bytes();
  const roberta::Outputs before = model.forward(batch);
  EXPECT_EQ(model.weight_bytes(), loaded) << "a pass without logits packed the decoder";
  const roberta::Outputs with = model.forward(batch, {.logits = true, .logit_rows = {3, 6}});
  EXPECT_GE(model.weight_bytes(), loaded + V * H * sizeof(float));
  EXPECT_EQ(model.forward(batch).last_hidden_state.data, before.last_hidden_state.data);
  EXPECT_EQ(with.last_hidden_state.data, before.last_hidden_state.data);
  // logits = LayerNorm(gelu(dense(h))) · Eᵀ + bias, from the checkpoint's own tensors
  const auto st = roberta::WeightStore::open_dir(dir.path());
  const auto f32 = [&](const std::string& name) { return st.to_float(*st.find(name)); };
  const std::vector<float> E = f32("roberta.embeddings.word_embeddings.weight"), W = f32("lm_head.dense.weight"),
                           b = f32("lm_head.dense.bias"), g = f32("lm_head.layer_norm.weight"),
                           beta = f32("lm_head.layer_norm.bias"), bias = f32("lm_head.bias");
  for (size_t i = 0; i < 2; ++i) {
    const float* x = before.last_hidden_state.row(i == 0 ? 3 : 6);
    std::vector<double> h(H);
    for (size_t o = 0; o < H; ++o) {
      double s = b[o];
      for (size_t k = 0; k < H; ++k) s += static_cast<double>(W[o * H + k]) * x[k];
      h[o] = 0.5 * s * (1 + std::erf(s / std::sqrt(2.0)));
    }
    double mean = 0, var = 0;
    for (double v : h) mean += v / H;
    for (double v : h) var += (v - mean) * (v - mean) / H;
    for (size_t o = 0; o < H; ++o) h[o] = (h[o] - mean) / std::sqrt(var + 1e-5) * g[o] + beta[o];
    double worst = 0;
    for (size_t v = 0; v < V; ++v) {
      double want = bias[v];
      for (size_t k = 0; k < H; ++k) want += static_cast<double>(E[v * H + k]) * h[k];
      worst = std::max(worst, std::abs(want - with.logits.row(i)[v]));
    }
    EXPECT_LT(worst, 1e-4) << "row " << i;
  }
}
