// Tests of `roberta fill-mask` and `roberta embed`, run as a user would run them: their answers
// against PyTorch reference dumps (tests/cli/make_fixtures.sh), and clear errors for bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "roberta/dev/npy.h"
#include "test_util.h"

namespace {

using json = nlohmann::json;
using namespace roberta::test::cli;

struct Reference {
  std::vector<int64_t> ids, mask;
  size_t B, L, H, V, layers;
  std::vector<float> last_hidden, logits, pooler;
};

const Reference& reference() {
  static const Reference ref = [] {
    Reference r;
    const std::string dump = kFixtures + "/tiny-dump/";
    const auto ids = roberta::read_npy(dump + "input_ids.npy");
    r.ids = ids.as_int64();
    r.mask = roberta::read_npy(dump + "attention_mask.npy").as_int64();
    r.B = static_cast<size_t>(ids.shape[0]), r.L = static_cast<size_t>(ids.shape[1]);
    r.layers = 0;
    while (std::filesystem::exists(dump + "hidden_states_" + std::to_string(r.layers + 1) + ".npy")) ++r.layers;
    const auto last = roberta::read_npy(dump + "hidden_states_" + std::to_string(r.layers) + ".npy");
    r.H = static_cast<size_t>(last.shape[2]);
    r.last_hidden = last.as_float();
    const auto logits = roberta::read_npy(dump + "logits.npy");
    r.V = static_cast<size_t>(logits.shape[2]);
    r.logits = logits.as_float();
    r.pooler = roberta::read_npy(dump + "pooler_output.npy").as_float();
    return r;
  }();
  return ref;
}

constexpr int64_t kMaskId = 50264;

// Softmax probabilities at (b, l) from the reference logits, in double.
std::vector<double> reference_probs(size_t b, size_t l) {
  const Reference& r = reference();
  const float* z = r.logits.data() + (b * r.L + l) * r.V;
  const double max = *std::max_element(z, z + r.V);
  std::vector<double> p(r.V);
  double sum = 0;
  for (size_t v = 0; v < r.V; ++v) sum += p[v] = std::exp(z[v] - max);
  for (auto& x : p) x /= sum;
  return p;
}

std::vector<size_t> mask_positions(size_t b) {
  const Reference& r = reference();
  std::vector<size_t> out;
  for (size_t l = 0; l < r.L; ++l)
    if (r.mask[b * r.L + l] && r.ids[b * r.L + l] == kMaskId) out.push_back(l);
  return out;
}

TEST(FillMask, TopKIdsAndScoresEqualPyTorchReference) {
  const Result res = run({"fill-mask", "--model", kTiny, "--json", "--top-k", "5"}, [] {
    std::string in;
    for (const auto& t : texts()) in += t + "\n";
    return in;
  }());
  ASSERT_EQ(res.status, 0) << res.err;
  const auto out = lines_of(res.out);
  ASSERT_EQ(out.size(), texts().size());
  size_t checked = 0;
  for (size_t b = 0; b < out.size(); ++b) {
    json answer = json::parse(out[b]);
    const auto masks = mask_positions(b);
    ASSERT_FALSE(masks.empty());
    if (masks.size() == 1) answer = json::array({answer});  // one mask: a flat list, like HF
    ASSERT_EQ(answer.size(), masks.size()) << out[b];
    for (size_t m = 0; m < masks.size(); ++m) {
      const auto p = reference_probs(b, masks[m]);
      std::vector<size_t> order(p.size());
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + 5, order.end(), [&](size_t x, size_t y) { return p[x] > p[y]; });
      ASSERT_EQ(answer[m].size(), 5u);
      for (size_t k = 0; k < 5; ++k) {
        EXPECT_EQ(answer[m][k]["token"].get<size_t>(), order[k]) << "text " << b << " mask " << m << " rank " << k;
        EXPECT_NEAR(answer[m][k]["score"].get<double>(), p[order[k]], 1e-5);
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 35u);
}

TEST(FillMask, TargetsAreScoredLikeTheFullSoftmax) {
  const std::string text = texts()[1];
  const Result res = run({"fill-mask", "--model", kTiny, "--json", "--targets", "door,window, garden", text});
  ASSERT_EQ(res.status, 0) << res.err;
  const json answer = json::parse(lines_of(res.out).at(0));
  ASSERT_EQ(answer.size(), 3u);
  const auto p = reference_probs(1, mask_positions(1).at(0));
  std::set<int64_t> seen;
  for (const auto& c : answer) {
    EXPECT_NEAR(c["score"].get<double>(), p[c["token"].get<size_t>()], 1e-5);
    seen.insert(c["token"].get<int64_t>());
  }
  EXPECT_EQ(seen.size(), 3u);
  // "door" is a vocabulary token without a leading space: HF uses it as is; " garden" is not.
  EXPECT_NE(res.err.find("garden"), std::string::npos) << res.err;
}

TEST(FillMask, SeveralMasksGiveOneListPerMask) {
  const Result res = run({"fill-mask", "--model", kTiny, "--json", "--top-k", "3", texts()[3]});
  ASSERT_EQ(res.status, 0) << res.err;
  const json answer = json::parse(lines_of(res.out).at(0));
  ASSERT_EQ(answer.size(), 2u);
  for (const auto& list : answer) {
    ASSERT_EQ(list.size(), 3u);
    // With several masks the sequence keeps <s>, </s> and the other <mask> (as HF does).
    EXPECT_NE(list[0]["sequence"].get<std::string>().find("<mask>"), std::string::npos);
  }
  // transformers' postprocess drops <pad> ids before decoding the sequence (not token_str).
  const Result pad =
      run({"fill-mask", "--model", kTiny, "--json", "--top-k", "2", "Hello <pad> there <mask> and <mask>!"});
  ASSERT_EQ(pad.status, 0) << pad.err;
  for (const auto& list : json::parse(lines_of(pad.out).at(0)))
    for (const auto& c : list) {
      const std::string sequence = c["sequence"];
      EXPECT_EQ(sequence.find("<pad>"), std::string::npos) << sequence;
      EXPECT_EQ(sequence.rfind("<s>Hello  there", 0), 0u) << sequence;
    }
}

TEST(FillMask, BadLinesAreErrorsButOtherLinesAreAnswered) {
  const std::string long_line = "word " + [] {
    std::string s;
    for (int i = 0; i < 600; ++i) s += "again ";
    return s;
  }() + "<mask>";
  const Result res = run({"fill-mask", "--model", kTiny, "--json"},
                         "A <mask> here.\n\nno mask here\n" + long_line + "\nbad \xff\xfe byte <mask>\nOne more <mask>.\n");
  EXPECT_EQ(res.status, 1);
  const auto out = lines_of(res.out);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_TRUE(json::parse(out[0]).is_array());
  EXPECT_TRUE(json::parse(out[1]).contains("error"));
  EXPECT_TRUE(json::parse(out[2]).contains("error"));
  EXPECT_TRUE(json::parse(out[3]).contains("error"));
  EXPECT_TRUE(json::parse(out[4]).contains("error"));
  EXPECT_TRUE(json::parse(out[5]).is_array());
  EXPECT_NE(res.err.find("error: line 2: no <mask>"), std::string::npos) << res.err;
  EXPECT_NE(res.err.find("error: line 3: no <mask>"), std::string::npos) << res.err;
  EXPECT_NE(res.err.find("error: line 4: the text has"), std::string::npos) << res.err;
  EXPECT_NE(res.err.find("at most 512"), std::string::npos) << res.err;
  EXPECT_NE(res.err.find("error: line 5: invalid UTF-8 in text at byte 4"), std::string::npos) << res.err;
}

TEST(FillMask, ModelComesFromRobertaModelWhenNotGiven) {
  const std::string text = "A <mask> here.";
  const Result given = run({"fill-mask", "--model", kTiny, "--json", text});
  ASSERT_EQ(given.status, 0) << given.err;
  const Result from_env = run({"fill-mask", "--json", text}, "", "ROBERTA_MODEL=" + kTiny);
  ASSERT_EQ(from_env.status, 0) << from_env.err;
  EXPECT_EQ(from_env.out, given.out);
  EXPECT_FALSE(given.out.empty());
  // --model wins over the environment.
  const Result both = run({"fill-mask", "--model", kTiny, "--json", text}, "", "ROBERTA_MODEL=/nonexistent");
  EXPECT_EQ(both.status, 0) << both.err;
  EXPECT_EQ(both.out, given.out);
}

TEST(FillMask, ModelProblemsAreClearErrors) {
  roberta::test::TempDir empty;
  Result r = run({"fill-mask", "--model", (empty / "missing").string(), "a <mask>"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("missing: model folder not found"), std::string::npos) << r.err;
  r = run({"fill-mask", "--model", kFixtures + "/no-tokenizer", "a <mask>"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no tokenizer found"), std::string::npos) << r.err;
  r = run({"fill-mask", "--model", kFixtures + "/no-lm-head", "a <mask>"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no MLM head"), std::string::npos) << r.err;
}

// ---------------------------------------------------------------- embed

std::vector<float> reference_pooling(const std::string& pooling, size_t b) {
  const Reference& r = reference();
  std::vector<float> out(r.H, 0.0f);
  if (pooling == "pooler") return {r.pooler.begin() + static_cast<ptrdiff_t>(b * r.H), r.pooler.begin() + static_cast<ptrdiff_t>((b + 1) * r.H)};
  std::vector<double> acc(r.H, pooling == "max" ? -INFINITY : 0.0);
  size_t n = 0;
  for (size_t l = 0; l < r.L; ++l) {
    if (!r.mask[b * r.L + l]) continue;
    const float* h = r.last_hidden.data() + (b * r.L + l) * r.H;
    if (pooling == "cls" && n == 0) acc.assign(h, h + r.H);
    for (size_t k = 0; k < r.H; ++k) {
      if (pooling == "mean") acc[k] += h[k];
      if (pooling == "max") acc[k] = std::max<double>(acc[k], h[k]);
    }
    ++n;
  }
  for (size_t k = 0; k < r.H; ++k) out[k] = static_cast<float>(pooling == "mean" ? acc[k] / n : acc[k]);
  return out;
}

TEST(Embed, EveryPoolingEqualsPyTorchReferenceInInputOrder) {
  roberta::test::TempDir dir;
  for (const std::string pooling : {"mean", "cls", "max", "pooler"}) {
    for (const bool normalize : {false, true}) {
      const auto out = dir / (pooling + (normalize ? "-n" : "") + ".npy");
      std::vector<std::string> args = {"embed", "--model", kTiny, "--pooling", pooling, "--format", "npy",
                                       "--output", out.string(), "--batch-size", "2", kTexts};
      if (normalize) args.push_back("--normalize");
      const Result res = run(args);
      ASSERT_EQ(res.status, 0) << res.err;
      const auto got = roberta::read_npy(out);
      const Reference& r = reference();
      ASSERT_EQ(got.shape, (std::vector<int64_t>{static_cast<int64_t>(r.B), static_cast<int64_t>(r.H)}));
      const auto values = got.as_float();
      for (size_t b = 0; b < r.B; ++b) {
        auto want = reference_pooling(pooling, b);
        if (normalize) {
          double norm = 0;
          for (float v : want) norm += double(v) * v;
          for (float& v : want) v = static_cast<float>(v / std::sqrt(norm));
        }
        double max_diff = 0;
        for (size_t k = 0; k < r.H; ++k) max_diff = std::max<double>(max_diff, std::abs(values[b * r.H + k] - want[k]));
        EXPECT_LE(max_diff, 1e-5) << pooling << (normalize ? " normalized" : "") << " text " << b;
      }
    }
  }
}

TEST(Embed, SentenceTransformersConfigSetsTheDefaults) {
  // A sentence-transformers folder: CLS pooling and a Normalize module, read from its config.
  roberta::test::TempDir dir;
  const auto model = dir / "st-model";
  std::filesystem::copy(kTiny, model, std::filesystem::copy_options::recursive);
  std::filesystem::create_directories(model / "1_Pooling");
  roberta::test::write_text(model / "1_Pooling" / "config.json",
                            R"({"word_embedding_dimension": 32, "pooling_mode_cls_token": true,
                                "pooling_mode_mean_tokens": false, "pooling_mode_max_tokens": false})");
  roberta::test::write_text(model / "modules.json",
                            R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])");
  const auto out = dir / "e.npy";
  const Result res = run({"embed", "--model", model.string(), "--format", "npy", "--output", out.string(), kTexts});
  ASSERT_EQ(res.status, 0) << res.err;
  const auto values = roberta::read_npy(out).as_float();
  const Reference& r = reference();
  for (size_t b = 0; b < r.B; ++b) {
    auto want = reference_pooling("cls", b);
    double norm = 0;
    for (float v : want) norm += double(v) * v;
    for (size_t k = 0; k < r.H; ++k) EXPECT_NEAR(values[b * r.H + k], want[k] / std::sqrt(norm), 1e-5) << b;
  }
}

TEST(Embed, JsonlOutputAndNoSilentOverwrite) {
  roberta::test::TempDir dir;
  const auto out = dir / "e.jsonl";
  roberta::test::write_text(out, "precious\n");
  Result r = run({"embed", "--model", kTiny, "--output", out.string(), kTexts});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  std::ifstream in(out);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "precious\n");
  r = run({"embed", "--model", kTiny, "--output", out.string(), "--force", kTexts});
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in2(out);
  size_t rows = 0;
  for (std::string line; std::getline(in2, line); ++rows) EXPECT_EQ(json::parse(line).size(), reference().H);
  EXPECT_EQ(rows, texts().size());
}

TEST(Embed, OverLongInputIsTruncatedWithWarningOrRefused) {
  std::string long_line;
  for (int i = 0; i < 700; ++i) long_line += "again ";
  long_line += "end";  // (a space at the end would be stripped, as sentence-transformers strips it)
  Result r = run({"embed", "--model", kTiny}, "short\n" + long_line + "\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(lines_of(r.out).size(), 2u);
  EXPECT_NE(r.err.find("warning: line 2 was truncated"), std::string::npos) << r.err;
  r = run({"embed", "--model", kTiny, "--no-truncate"}, "short\n" + long_line + "\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error: line 2: 703 tokens, more than the 512 allowed"), std::string::npos) << r.err;
}

// Texts are stripped of whitespace at their ends as sentence-transformers strips them, but an
// invalid byte is named where it is in the line as given.
TEST(Embed, InvalidUtf8IsNamedAtItsByteInTheLineAsGiven) {
  const Result r = run({"embed", "--model", kTiny}, "   ab\xff c \n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error: line 1: invalid UTF-8"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at byte 5"), std::string::npos) << r.err;
}

}  // namespace
