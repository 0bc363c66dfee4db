// The task pipelines' options, label rules and errors on roberta-base's tokenizer and a config alone
// (no weights): default functions, entailment ids, windows, byte offsets, model_max_length.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipelines_test_util.h"
#include "roberta/pipelines.h"
#include "test_util.h"

namespace {

using json = nlohmann::json;
using namespace roberta;
using namespace roberta::test::pipelines;

// ---- text-classification

TEST(TextClassifier, DefaultFunctionFollowsTransformersRule) {
  ModelConfig c = make_config({{"id2label", {"a", "b"}}});
  EXPECT_EQ(TextClassifier(tokenizer(), c).default_function(), ClassificationFunction::kSoftmax);
  c.problem_type = "multi_label_classification";
  EXPECT_EQ(TextClassifier(tokenizer(), c).default_function(), ClassificationFunction::kSigmoid);
  c = make_config({{"id2label", {"score"}}});
  EXPECT_EQ(TextClassifier(tokenizer(), c).default_function(), ClassificationFunction::kSigmoid);
  c.problem_type = "regression";
  EXPECT_EQ(TextClassifier(tokenizer(), c).default_function(), ClassificationFunction::kNone);
}

TEST(TextClassifier, Errors) {
  const TextClassifier tc(tokenizer(), make_config({{"id2label", {"a", "b"}}, {"model_max_length", 8}}));
  const std::vector<TextInput> long_text{{"one two three four five six seven eight nine", std::nullopt}};
  test::expect_error([&] { tc.prepare(long_text); }, {"input 1", "tokens", "at most 8", "truncation"});
  TextClassifyOptions cut;
  cut.truncation = true;
  EXPECT_EQ(tc.prepare(long_text, cut).encodings[0].size(), 8u);
  const std::vector<TextInput> bad{{"ok", std::nullopt}, {std::string("a\xff"), std::nullopt}};
  test::expect_error([&] { tc.prepare(bad); }, {"input 2", "invalid UTF-8", "byte 1"});
  test::expect_error([&] { tc.run(tc.prepare(std::vector<TextInput>{{"x", std::nullopt}})); }, {"no model"});
  const auto p = tc.prepare(std::vector<TextInput>{{"x", std::nullopt}});
  test::expect_error([&] { tc.finish(p, Matrix(1, 3)); }, {"1x3", "expected 1x2"});
  test::expect_error([] { parse_classification_function("relu"); }, {"relu", "softmax"});
  EXPECT_EQ(parse_classification_function("SIGMOID"), ClassificationFunction::kSigmoid);
}

// ---- zero-shot-classification

TEST(ZeroShot, EntailmentAndContradictionIds) {
  const ZeroShotClassifier a(tokenizer(), make_config({{"id2label", {"CONTRADICTION", "NEUTRAL", "ENTAILMENT"}}}));
  EXPECT_EQ(a.entailment_id(), 2u);
  EXPECT_EQ(a.contradiction_id(), 0u);
  const ZeroShotClassifier b(tokenizer(), make_config({{"id2label", {"entailment", "neutral", "contradiction"}}}));
  EXPECT_EQ(b.entailment_id(), 0u);
  EXPECT_EQ(b.contradiction_id(), 2u);  // HF: -1, the last column
  EXPECT_EQ(a.warning(), "");
  ModelConfig bad = make_config({{"id2label", {"contradiction", "neutral", "entailment"}}});
  bad.label2id["entailment"] = 7;
  test::expect_error([&] { ZeroShotClassifier(tokenizer(), bad); }, {"entailment label id 7", "3 labels"});
  try {
    ZeroShotClassifier(tokenizer(), make_config({{"id2label", {"entailment"}}}));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("at least 2 labels"), std::string::npos) << e.what();
  }
}

// Without an "entail..." label transformers warns and takes entailment_id = -1: entailment is the
// last column and contradiction column 0 (zero_shot_classification.py, entailment_id and
// postprocess). The expected scores are those formulas on the logits, computed here.
TEST(ZeroShot, WithoutAnEntailmentLabelTheLastColumnIsEntailment) {
  const ZeroShotClassifier zs(tokenizer(), make_config({{"id2label", {"LABEL_0", "LABEL_1", "LABEL_2"}}}));
  EXPECT_EQ(zs.entailment_id(), 2u);
  EXPECT_EQ(zs.contradiction_id(), 0u);
  EXPECT_NE(zs.warning().find("no label starting with \"entail\""), std::string::npos) << zs.warning();
  const std::vector<std::string> seq{"Some text"};
  ZeroShotOptions o;
  o.candidate_labels = {"a", "b"};
  const auto p = zs.prepare(seq, o);
  const Matrix logits = matrix({{0.5, -1.0, 2.0}, {1.5, 0.25, -0.5}});
  const double ea = std::exp(2.0), eb = std::exp(-0.5);
  ZeroShotResult r = zs.finish(p, logits, o).at(0);
  ASSERT_EQ(r.labels, (std::vector<std::string>{"a", "b"}));
  EXPECT_NEAR(r.scores[0], ea / (ea + eb), 1e-6);
  EXPECT_NEAR(r.scores[1], eb / (ea + eb), 1e-6);
  o.multi_label = true;
  r = zs.finish(p, logits, o).at(0);
  ASSERT_EQ(r.labels, (std::vector<std::string>{"a", "b"}));
  EXPECT_NEAR(r.scores[0], ea / (ea + std::exp(0.5)), 1e-6);
  EXPECT_NEAR(r.scores[1], eb / (eb + std::exp(1.5)), 1e-6);
}

TEST(ZeroShot, Errors) {
  const ZeroShotClassifier zs(tokenizer(), make_config({{"id2label", {"contradiction", "neutral", "entailment"}},
                                                        {"model_max_length", 12}}));
  const std::vector<std::string> seq{"Some text"};
  ZeroShotOptions o;
  test::expect_error([&] { zs.prepare(seq, o); }, {"at least one candidate label"});
  o.candidate_labels = {"a"};
  o.hypothesis_template = "no field";
  test::expect_error([&] { zs.prepare(seq, o); }, {"no {}"});
  o.hypothesis_template = "{label}";
  test::expect_error([&] { zs.prepare(seq, o); }, {"{label}", "not supported"});
  o.hypothesis_template = "This is {}.";
  test::expect_error([&] { zs.prepare(std::vector<std::string>{""}, o); }, {"input 1: the text is empty"});
  o.candidate_labels = {"a very long hypothesis label that cannot fit in twelve tokens at all"};
  test::expect_error([&] { zs.prepare(seq, o); }, {"hypothesis", "at most 12"});
  // Python's str.format("L") (transformers' hypothesis_template.format(label)): '{{x}} {0} {0}' ->
  // '{x} L L', '{{}} {}' -> '{} L'; '{{x}} {} {0}' and '{0}{}' raise ValueError (cannot switch
  // between automatic and manual numbering), 'a{}b{}' IndexError (replacement index 1 out of range).
  EXPECT_EQ(format_hypothesis("{{x}} {0} {0}", "L"), "{x} L L");
  EXPECT_EQ(format_hypothesis("{{}} {}", "L"), "{} L");
  test::expect_error([] { format_hypothesis("{{x}} {} {0}", "L"); }, {"cannot switch"});
  test::expect_error([] { format_hypothesis("{0}{}", "L"); }, {"cannot switch"});
  test::expect_error([] { format_hypothesis("a{}b{}", "L"); }, {"index 1 out of range"});
  test::expect_error([] { format_hypothesis("a } b", "L"); }, {"single '}'"});
  EXPECT_EQ(parse_candidate_labels(" a, b ,,\u00a0c\u00a0,"), (std::vector<std::string>{"a", "b", "c"}));
}

// ---- CrossEncoder

TEST(CrossEncoder, ConfigAndErrors) {
  EXPECT_FALSE(CrossEncoderConfig::from_json_text("{}", "c").activation);
  EXPECT_EQ(*CrossEncoderConfig::from_json_text(R"({"sentence_transformers": {"activation_fn": "torch.nn.Tanh"}})", "c")
                 .activation,
            CrossEncoderActivation::kTanh);
  try {
    CrossEncoderConfig::from_json_text(R"({"sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Mish"}})",
                                       "dir/config.json");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("dir/config.json: sentence_transformers.activation_fn"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("Mish"), std::string::npos) << e.what();
  }
  const CrossEncoder three(tokenizer(), make_config({{"id2label", {"a", "b", "c"}}}));
  EXPECT_EQ(three.default_activation(), CrossEncoderActivation::kIdentity);
  const std::vector<std::string> docs{"x"};
  test::expect_error([&] { three.rank("q", docs); }, {"one label", "has 3"});
  const CrossEncoder one(tokenizer(), make_config({{"id2label", {"score"}}}));
  EXPECT_EQ(one.default_activation(), CrossEncoderActivation::kSigmoid);
  test::expect_error([&] { one.rank("q", docs); }, {"no model"});
  const std::vector<TextPair> bad{{"q", std::string("\xc3")}};
  test::expect_error([&] { one.prepare(bad); }, {"input 1: second text: invalid UTF-8"});
  EXPECT_TRUE(CrossEncoder::rank_scores({}, {}, {}).empty());
}

// ---- token-classification

// A tokenizer without a post-processor (no special tokens around the text): the windows are the
// text's tokens alone, max_length of them, each `stride` tokens into the one before.
TEST(TokenClassifier, WindowsOfATokenizerWithoutSpecialTokens) {
  std::ifstream in(std::string(ROBERTA_TEST_DATA) + "/hf/wordpiece/tokenizer.json");
  json doc = json::parse(in);
  doc["post_processor"] = nullptr;
  const Tokenizer tok = Tokenizer::from_tokenizer_json_text(doc.dump(), "no-post-processor");
  const TokenClassifier ner(tok, make_config({{"id2label", {"O", "B-LOC"}}}));
  const std::string text = "안녕하세요 서울은 한국의 수도입니다. New York is a city in the world!";
  const Encoding full = tok.encode(text);
  ASSERT_EQ(full.size(), 19u);
  TokenClassifyOptions o;
  o.max_length = 5;
  o.stride = 2;
  const auto p = ner.prepare(text, o);
  ASSERT_EQ(p.windows.size(), 6u);  // tokens 0-4, 3-7, 6-10, 9-13, 12-16, 15-18
  for (size_t w = 0; w < p.windows.size(); ++w) {
    const std::vector<int32_t> want(full.ids.begin() + static_cast<ptrdiff_t>(3 * w),
                                    full.ids.begin() + static_cast<ptrdiff_t>(std::min<size_t>(3 * w + 5, 19)));
    EXPECT_EQ(p.windows[w].ids, want) << w;
  }
  o.stride.reset();
  const auto cut = ner.prepare(text, o);
  ASSERT_EQ(cut.windows.size(), 1u);
  EXPECT_EQ(cut.windows[0].ids, std::vector<int32_t>(full.ids.begin(), full.ids.begin() + 5));
  o.max_length = 0;
  EXPECT_EQ(ner.prepare("", o).windows.at(0).size(), 0u);
}

TEST(TokenClassifier, ByteOffsetsAndErrors) {
  const TokenClassifier ner(tokenizer(), make_config({{"id2label", {"O", "B-LOC"}}, {"model_max_length", 10}}));
  const std::string text = "Zürich and São Paulo are cities, as is Lyon.";
  TokenClassifyOptions o;
  o.ignore_labels = {};
  o.stride = 2;
  for (const Aggregation a : {Aggregation::kSimple, Aggregation::kNone}) {  // windows with and without one
    o.aggregation = a;
    const auto p = ner.prepare(text, o);
    EXPECT_GE(p.windows.size(), 2u);
    size_t rows = 0;
    for (const auto& w : p.windows) rows += w.size();
    Matrix logits(rows, 2);  // all B-LOC
    for (size_t r = 0; r < rows; ++r) logits.row(r)[1] = 1.0f;
    const auto entities = ner.finish(p, logits, o);
    EXPECT_FALSE(entities.empty());
    for (const TokenEntity& e : entities)
      EXPECT_EQ(text.substr(e.byte_start, e.byte_end - e.byte_start), pipeline_test_slice(text, e.start, e.end));
  }
  o.aggregation = Aggregation::kFirst;
  o.stride = 8;
  test::expect_error([&] { ner.prepare(text, o); }, {"stride 8", "less than the 8"});
  o.stride = 10;
  test::expect_error([&] { ner.prepare(text, o); }, {"stride 10", "window length 10"});
  test::expect_error([&] { ner.prepare(std::string("\xe2\x82"), {}); }, {"invalid UTF-8 at byte 0"});
  test::expect_error([] { parse_aggregation("mean"); }, {"mean", "average"});
  EXPECT_TRUE(ner.finish(ner.prepare("", {}), Matrix(2, 2), {}).empty());
}

// ---- question-answering

TEST(QuestionAnswerer, Errors) {
  const QuestionAnswerer qa(tokenizer(), make_config({{"id2label", {"LABEL_0", "LABEL_1"}}}));
  test::expect_error([&] { qa.prepare("Who?", ""); }, {"context is empty"});
  test::expect_error([&] { qa.prepare("", "Text."); }, {"question is empty"});
  test::expect_error([&] { qa.prepare("Who?", std::string("a\x80")); }, {"context", "invalid UTF-8", "byte 1"});
  QuestionAnswerOptions o;
  o.max_seq_len = 12;
  o.doc_stride = 2;
  test::expect_error([&] { qa.prepare("Who was the first person to walk on the moon?", "Neil Armstrong did.", o); },
                     {"question has", "no room is left for the context"});
  o.doc_stride = 13;
  test::expect_error([&] { qa.prepare("Who?", "a b c d e f g h i j k l m n o p", o); }, {"doc_stride (13)", "max_seq_len (12)"});
  o.doc_stride = 6;
  test::expect_error([&] { qa.prepare("Who?", "a b c d e f g h i j k l m n o p", o); }, {"doc_stride 6", "less than the 6"});
  o = {};
  o.top_k = 0;
  test::expect_error([&] { qa.prepare("Who?", "Me.", o); }, {"top_k"});
  o = {};
  test::expect_error([&] { qa.run(qa.prepare("Who?", "Me.", o)); }, {"no model"});
  const auto p = qa.prepare("Who?", "Me.", o);
  test::expect_error([&] { qa.finish(p, SpanLogits{}, o); }, {"0 start", "tokens"});
}

// tokenizer_config.json's model_max_length is transformers' tokenizer.model_max_length: truncation
// stops there (text classification with truncation, QA's default max_seq_len = min(it, 384)),
// while an untruncated text may still use every position; unset (1e30) it is ignored.
TEST(ModelMaxLength, FromTokenizerConfigJson) {
  test::TempDir dir;
  std::filesystem::copy_file(kTokenizerDir + "/tokenizer.json", dir / "tokenizer.json");
  EXPECT_EQ(Tokenizer::from_dir(dir.path()).model_max_length(), std::nullopt);
  test::write_text(dir / "tokenizer_config.json", R"({"model_max_length": 1000000000000000019884624838656})");
  EXPECT_EQ(Tokenizer::from_dir(dir.path()).model_max_length(), std::nullopt);
  test::write_text(dir / "tokenizer_config.json", R"({"model_max_length": -3})");
  test::expect_error([&] { Tokenizer::from_dir(dir.path()); }, {"tokenizer_config.json", "model_max_length -3"});
  test::write_text(dir / "tokenizer_config.json", R"({"model_max_length": 16, "add_prefix_space": false})");
  const Tokenizer tok = Tokenizer::from_dir(dir.path());
  ASSERT_EQ(tok.model_max_length(), std::optional<size_t>(16));
  const TextClassifier tc(tok, make_config({{"id2label", {"a", "b"}}}));
  const std::string long_text = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
                                "fifteen sixteen seventeen eighteen nineteen twenty";
  TextClassifyOptions o;
  o.truncation = true;
  EXPECT_EQ(tc.prepare(std::vector<TextInput>{{long_text, std::nullopt}}, o).encodings.at(0).size(), 16u);
  o.truncation = false;
  EXPECT_EQ(tc.prepare(std::vector<TextInput>{{long_text, std::nullopt}}, o).encodings.at(0).size(),
            tok.encode(long_text).size());
  const QuestionAnswerer qa(tok, make_config({{"id2label", {"LABEL_0", "LABEL_1"}}}));
  for (const Encoding& w : qa.prepare("Which?", long_text).windows) EXPECT_LE(w.size(), 16u);
}

// transformers tokenizes an example that fits whole whatever max_seq_len says; a max_seq_len above
// the model's is an error only where a window would need it.
TEST(QuestionAnswerer, MaxSeqLenAboveTheModelsOnlyMattersForLongInputs) {
  const QuestionAnswerer qa(tokenizer(), make_config({{"id2label", {"LABEL_0", "LABEL_1"}}, {"model_max_length", 16}}));
  QuestionAnswerOptions o;
  o.max_seq_len = 1024;
  const auto p = qa.prepare("Who?", "Me.", o);
  ASSERT_EQ(p.windows.size(), 1u);
  EXPECT_EQ(p.windows[0].ids, tokenizer().encode_pair("Who?", "Me.").ids);
  test::expect_error([&] { qa.prepare("Who?", "a b c d e f g h i j k l m n o p", o); },
                     {"max_seq_len 1024", "the model's 16", "take 22 tokens"});
  o.max_seq_len = 2000;
  test::expect_error([&] { qa.prepare("Who?", std::string(3000, 'a') + " b", o); },
                     {"max_seq_len 2000", "the model's 16"});
}

}  // namespace
