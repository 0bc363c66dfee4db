// Embedder: the sentence-transformers folder configuration, and Python's str.lower().
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tokenizer/lowercase.h"
#include "roberta/embedder.h"
#include "test_util.h"
#include "tokenizer/unicode.h"

namespace {

const std::filesystem::path kDemo = ROBERTA_DEMO_MODEL;

// A copy of the demo model folder as a sentence-transformers folder (modules.json: Transformer and
// mean Pooling; without `modules`, none) with sentence_bert_config.json when given.
std::filesystem::path sentence_model(const roberta::test::TempDir& dir, const std::string& name,
                                     const std::string& sbert_config, bool modules = true) {
  const auto out = dir / name;
  std::filesystem::create_directories(out);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    std::filesystem::copy_file(kDemo / f, out / f);
  if (!sbert_config.empty()) roberta::test::write_text(out / "sentence_bert_config.json", sbert_config);
  if (modules) {
    roberta::test::write_text(out / "modules.json",
                              R"([{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
                                  {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
    std::filesystem::create_directories(out / "1_Pooling");
    roberta::test::write_text(out / "1_Pooling" / "config.json",
                              R"({"word_embedding_dimension": 256, "pooling_mode_mean_tokens": true})");
  }
  return out;
}

float max_abs_diff(const roberta::Matrix& a, const roberta::Matrix& b) {
  float d = 0;
  for (size_t i = 0; i < a.data.size(); ++i) d = std::max(d, std::abs(a.data[i] - b.data[i]));
  return d;
}

// Regression: sentence_bert_config.json was ignored, so a model with max_seq_length 128 embedded
// up to the position limit and long texts differed from sentence-transformers, and do_lower_case
// was not applied.
TEST(Embedder, SentenceBertConfigSetsMaxSeqLengthAndLowercasing) {
  roberta::test::TempDir dir;
  const roberta::Embedder plain = roberta::Embedder::load(sentence_model(dir, "plain", ""));
  const roberta::Embedder st =
      roberta::Embedder::load(sentence_model(dir, "st", R"({"max_seq_length": 12, "do_lower_case": true})"));
  EXPECT_EQ(st.max_seq_length(), 12u);
  EXPECT_EQ(plain.max_seq_length(), 128u);
  const std::vector<std::string> text{"The Old Man Walked Slowly Down The Long Road Towards The Village, "
                                      "Where The Lights Were Already Burning In Every Window."};
  const std::vector<std::string> lower{roberta::lowercase(text[0])};
  roberta::EmbedOptions at12;
  at12.max_length = 12;
  const roberta::Matrix got = st(text);
  const roberta::Matrix want = plain(lower, at12);  // what sentence-transformers computes
  EXPECT_LT(max_abs_diff(got, want), 1e-6);
  EXPECT_GT(max_abs_diff(got, plain(lower)), 1e-3) << "truncation at 12 must change the embedding";
  EXPECT_GT(max_abs_diff(got, plain(text, at12)), 1e-3) << "lowercasing must change the embedding";
  roberta::test::expect_error(
      [&] { roberta::Embedder::load(sentence_model(dir, "bad", R"({"max_seq_length": "long"})")); },
      {"sentence_bert_config.json", "max_seq_length"});
  // Without modules.json sentence-transformers builds Transformer + mean pooling from the model
  // alone (_load_auto_model): sentence_bert_config.json is not read.
  const roberta::Embedder bare = roberta::Embedder::load(
      sentence_model(dir, "bare", R"({"max_seq_length": 12, "do_lower_case": true})", /*modules=*/false));
  EXPECT_EQ(bare.max_seq_length(), 128u);
  EXPECT_FALSE(bare.config().do_lower_case);
  EXPECT_LT(max_abs_diff(bare(text), plain(text)), 1e-6);
  EXPECT_NO_THROW(roberta::Embedder::load(sentence_model(dir, "bad-unread", R"({"max_seq_length": "long"})", false)));
  // Without max_seq_length, sentence-transformers' Transformer takes min(max_position_embeddings,
  // tokenizer.model_max_length), the latter from tokenizer_config.json.
  const auto capped = sentence_model(dir, "capped", "");
  roberta::test::write_text(capped / "tokenizer_config.json", R"({"model_max_length": 20})");
  EXPECT_EQ(roberta::Embedder::load(capped).max_seq_length(), 20u);
  roberta::test::write_text(capped / "sentence_bert_config.json", R"({"max_seq_length": 40})");
  EXPECT_EQ(roberta::Embedder::load(capped).max_seq_length(), 40u);
}

// modules.json and the Pooling module's config as sentence-transformers reads them
// (SentenceTransformer._load_sbert_model, models/Pooling.py): the Pooling config comes from its
// module's path; absent pooling_mode_* keys take Pooling's defaults (mean on); pooling_mode, a
// string, sets one mode; several modes concatenate. What it would compute otherwise (modules we do
// not run, Normalize before Dense) is refused, never silently skipped. (The embeddings of every mode
// against PyTorch: tests/parity/run_st_parity.sh.)
TEST(Embedder, SentenceTransformersModulesAsSentenceTransformersReadsThem) {
  using roberta::SentenceTransformerConfig;
  using roberta::test::write_text;
  roberta::test::TempDir dir;
  const std::string transformer =
      R"({"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"})";
  const auto folder = [&](const std::string& name, const std::string& pooling_config,
                          const std::string& more_modules = "", const std::string& pooling_path = "pool") {
    const auto out = dir / name;
    std::filesystem::create_directories(out / pooling_path);
    write_text(out / pooling_path / "config.json", pooling_config);
    write_text(out / "modules.json", "[" + transformer + R"(, {"idx": 1, "name": "1", "path": ")" + pooling_path +
                                         R"(", "type": "sentence_transformers.models.Pooling"})" + more_modules + "]");
    return out;
  };
  EXPECT_EQ(SentenceTransformerConfig::from_dir(folder("path", R"({"pooling_mode_cls_token": true,
      "pooling_mode_mean_tokens": false})")).pooling, roberta::Pooling::kCls);
  EXPECT_EQ(SentenceTransformerConfig::from_dir(folder("defaults", R"({"word_embedding_dimension": 32})")).pooling,
            roberta::Pooling::kMean);
  EXPECT_EQ(SentenceTransformerConfig::from_dir(folder("string", R"({"pooling_mode": "MAX"})")).pooling,
            roberta::Pooling::kMax);
  const auto dropout = SentenceTransformerConfig::from_dir(
      folder("dropout", "{}", R"(, {"idx": 2, "name": "2", "path": "2", "type": "sentence_transformers.models.Dropout"},
        {"idx": 3, "name": "3", "path": "3", "type": "sentence_transformers.models.Normalize"})"));
  EXPECT_TRUE(dropout.normalize);
  // Several modes: their vectors one after another, in Pooling.forward's order (cls, max, mean, ...).
  const auto two = SentenceTransformerConfig::from_dir(folder("two", R"({"pooling_mode_cls_token": true})"));
  EXPECT_EQ(two.pooling_modes, (std::vector<roberta::Pooling>{roberta::Pooling::kCls, roberta::Pooling::kMean}));
  const auto sqrt_len = SentenceTransformerConfig::from_dir(folder(
      "sqrt", R"({"pooling_mode_mean_tokens": false, "pooling_mode_mean_sqrt_len_tokens": true,
                  "pooling_mode_lasttoken": true, "pooling_mode_max_tokens": true})"));
  EXPECT_EQ(sqrt_len.pooling_modes,
            (std::vector<roberta::Pooling>{roberta::Pooling::kMax, roberta::Pooling::kMeanSqrtLen,
                                           roberta::Pooling::kLastToken}));
  roberta::test::expect_error(
      [&] { SentenceTransformerConfig::from_dir(folder("none", R"({"pooling_mode_mean_tokens": false})")); },
      {"config.json", "no pooling mode"});
  roberta::test::expect_error([&] { SentenceTransformerConfig::from_dir(folder("bad", R"({"pooling_mode": "sum"})")); },
                              {"pooling_mode \"sum\""});
  roberta::test::expect_error(
      [&] {
        SentenceTransformerConfig::from_dir(folder(
            "ln", "{}", R"(, {"idx": 2, "name": "2", "path": "2", "type": "sentence_transformers.models.LayerNorm"})"));
      },
      {"modules.json", "module 2", "sentence_transformers.models.LayerNorm", "not supported"});
  roberta::test::expect_error(
      [&] {
        SentenceTransformerConfig::from_dir(folder(
            "order", "{}", R"(, {"idx": 2, "name": "2", "path": "2", "type": "sentence_transformers.models.Normalize"},
              {"idx": 3, "name": "3", "path": "3", "type": "sentence_transformers.models.Dense"})"));
      },
      {"modules.json", "module 3", "after a Normalize"});
}

// roberta::lowercase against Python's own str.lower() on every code point, and final sigma.
TEST(Lowercase, EqualsPythonStrLower) {
  std::vector<std::string> inputs = {"ΟΔΟΣ", "ΣΑΣ.", "Σ", "AΣb", "AΣ'", "A'Σ", "Σ A", "İstanbul", "ẞ ǅ Ω K Å",
                                     "Ａ ＢＣ", "plain ascii"};
  for (char32_t start = 0x20; start < 0x110000; start += 512) {  // every code point, in chunks
    std::string chunk;
    for (char32_t cp = start; cp < std::min<char32_t>(start + 512, 0x110000); ++cp)
      if (cp < 0xD800 || cp > 0xDFFF) roberta::unicode::append_utf8(chunk, cp);
    inputs.push_back(chunk);
  }
  roberta::test::TempDir dir;
  roberta::test::write_text(dir / "in.json", nlohmann::json(inputs).dump());
  const std::string cmd = "/usr/bin/python3 -c 'import json,sys; print(json.dumps([s.lower() for s in "
                          "json.load(open(sys.argv[1], encoding=\"utf-8\"))]))' " +
                          (dir / "in.json").string() + " > " + (dir / "out.json").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(dir / "out.json");
  const auto want = nlohmann::json::parse(in).get<std::vector<std::string>>();
  ASSERT_EQ(want.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(roberta::lowercase(inputs[i]), want[i]) << "input " << i;
}

}  // namespace

namespace {

TEST(Embedder, PrepareIdsEqualsPrepareOfTheSameTokens) {
  const roberta::Embedder embed = roberta::Embedder::load(kDemo);
  const roberta::PreparedText text = embed.prepare("The capital of France is Paris.");
  const std::vector<int32_t> inner(text.ids.begin() + 1, text.ids.end() - 1);
  EXPECT_EQ(embed.prepare_ids(inner).ids, text.ids);
  const std::vector<int32_t> bad{5, -1};
  EXPECT_THROW(embed.prepare_ids(bad), roberta::Error);
  const std::vector<int32_t> big{static_cast<int32_t>(embed.model().config().vocab_size)};
  EXPECT_THROW(embed.prepare_ids(big), roberta::Error);
}

TEST(Embedder, TruncationKeepsTheChosenEndBetweenSpecialTokens) {
  const roberta::Embedder embed = roberta::Embedder::load(kDemo);
  const roberta::PreparedText full = embed.prepare("one two three four five six seven eight nine ten");
  ASSERT_GT(full.ids.size(), 6u);
  roberta::EmbedOptions o;
  o.max_length = 5;
  const roberta::PreparedText right = embed.prepare("one two three four five six seven eight nine ten", o);
  EXPECT_TRUE(right.truncated);
  EXPECT_EQ(right.ids, (std::vector<int32_t>{full.ids[0], full.ids[1], full.ids[2], full.ids[3], full.ids.back()}));
  o.truncation_side = roberta::Side::kLeft;
  const roberta::PreparedText left = embed.prepare("one two three four five six seven eight nine ten", o);
  const size_t n = full.ids.size();
  EXPECT_EQ(left.ids, (std::vector<int32_t>{full.ids[0], full.ids[n - 4], full.ids[n - 3], full.ids[n - 2], full.ids[n - 1]}));
  o.truncate = false;
  EXPECT_THROW(embed.prepare("one two three four five six seven eight nine ten", o), roberta::Error);
}

// A bad text among several: the error says which (what(): "input 3: ..."), and carries its index
// and the message without it for a front end to word ("line 3: ...").
TEST(Embedder, ABadTextsErrorNamesItsInput) {
  const roberta::Embedder embed = roberta::Embedder::load(kDemo);
  const std::vector<std::string> texts{"A good text.", "Another.", "bad \xFF byte", "Fine."};
  try {
    embed(texts);
    FAIL() << "no error";
  } catch (const roberta::Error& e) {
    ASSERT_TRUE(e.input().has_value());
    EXPECT_EQ(*e.input(), 2u);
    EXPECT_EQ(e.kind(), roberta::ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()), "input 3: " + e.detail());
    EXPECT_NE(e.detail().find("invalid UTF-8"), std::string::npos) << e.detail();
    EXPECT_EQ(e.detail().find("input"), std::string::npos) << e.detail();
  }
  const roberta::Error plain("no index");
  EXPECT_FALSE(plain.input().has_value());
  EXPECT_EQ(plain.detail(), "no index");
}

TEST(Embedder, L2NormalizeMatchesTheNormalizeOption) {
  std::vector<float> v{3, 4};
  roberta::l2_normalize(v);
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(v[1], 0.8f);
  std::vector<float> zero{0, 0};
  roberta::l2_normalize(zero);
  EXPECT_EQ(zero[0], 0.0f);
  const roberta::Embedder embed = roberta::Embedder::load(kDemo);
  const roberta::PreparedText p = embed.prepare("a short text");
  roberta::EmbedOptions raw, unit;
  raw.normalize = false;
  unit.normalize = true;
  roberta::Matrix a = embed.run(std::span(&p, 1), raw);
  const roberta::Matrix b = embed.run(std::span(&p, 1), unit);
  roberta::l2_normalize(std::span(a.row(0), a.cols));
  EXPECT_EQ(a.data, b.data);  // bit for bit: the server normalises after the batch
}

}  // namespace
