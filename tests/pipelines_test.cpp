// The task pipelines against Hugging Face's own results (tests/data/pipelines/*.jsonl, made by
// tools/hf_goldens/gen_pipeline_goldens.py with transformers' and sentence-transformers' own
// post-processing code): our prepare must give HF's token ids and windows, and our finish on the
// recorded logits HF's labels, entities, spans and scores.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "roberta/pipelines.h"
#include "roberta/threads.h"
#include "random_model.h"
#include "test_util.h"

namespace {

using json = nlohmann::json;
using namespace roberta;

const std::string kGoldens = std::string(ROBERTA_TEST_DATA) + "/pipelines/";
const std::string kTokenizerDir = std::string(ROBERTA_SHARED_DIR) + "/assets/roberta-base-tokenizer";
constexpr double kTol = 1e-5;

std::vector<json> read_jsonl(const std::string& name) {
  std::ifstream in(kGoldens + name);
  EXPECT_TRUE(in.good()) << kGoldens + name;
  std::vector<json> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  EXPECT_FALSE(out.empty()) << name;
  return out;
}

// text[start:end] in code points (Python's slicing of a str).
std::string pipeline_test_slice(const std::string& text, int64_t start, int64_t end) {
  std::vector<size_t> at;
  for (size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) at.push_back(i);
  at.push_back(text.size());
  const auto b = at[static_cast<size_t>(start)], e = at[static_cast<size_t>(end)];
  return text.substr(b, e - b);
}

const Tokenizer& tokenizer() {
  static const Tokenizer t = Tokenizer::from_dir(kTokenizerDir);
  return t;
}

// A config with the golden's labels whose positions allow model_max_length tokens.
ModelConfig make_config(const json& c) {
  ModelConfig m;
  m.vocab_size = 50265;
  m.hidden_size = 8;
  m.num_hidden_layers = 1;
  m.num_attention_heads = 2;
  m.intermediate_size = 16;
  m.pad_token_id = 1;
  m.max_position_embeddings = c.value("model_max_length", 512) + 2;
  m.id2label = c["id2label"].get<std::vector<std::string>>();
  m.label2id.clear();
  for (size_t i = 0; i < m.id2label.size(); ++i) m.label2id[m.id2label[i]] = static_cast<int64_t>(i);
  m.problem_type = c.value("problem_type", std::string());
  return m;
}

Matrix matrix(const json& rows) {
  Matrix m(rows.size(), rows.at(0).size());
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t c = 0; c < m.cols; ++c) m.row(r)[c] = rows[r][c].get<float>();
  return m;
}

// Our encoding against HF's recorded one (ids always; the other fields the record has).
void expect_encoding(const Encoding& e, const json& hf, const std::string& where) {
  ASSERT_EQ(e.ids, hf["ids"].get<std::vector<int32_t>>()) << where;
  if (hf.contains("offsets")) {
    std::vector<Offsets> offsets;
    for (const auto& o : hf["offsets"]) offsets.emplace_back(o[0].get<int64_t>(), o[1].get<int64_t>());
    EXPECT_EQ(e.offsets, offsets) << where;
  }
  if (hf.contains("special_tokens_mask")) {
    EXPECT_EQ(e.special_tokens_mask, hf["special_tokens_mask"].get<std::vector<uint8_t>>()) << where;
  }
  if (hf.contains("sequence_ids")) {
    EXPECT_EQ(e.sequence_ids, hf["sequence_ids"].get<std::vector<int8_t>>()) << where;
  }
  if (hf.contains("word_ids")) {
    EXPECT_EQ(e.word_ids, hf["word_ids"].get<std::vector<int32_t>>()) << where;
  }
}

// ---- text-classification

TEST(TextClassifierGolden, MatchesTransformers) {
  for (const json& rec : read_jsonl("text_classification.jsonl")) {
    const std::string name = rec["name"];
    SCOPED_TRACE(name);
    const json& kw = rec["options"];
    TextClassifyOptions o;
    if (kw.contains("top_k"))
      o.top_k = kw["top_k"].is_null() ? std::nullopt : std::optional<size_t>(kw["top_k"].get<size_t>());
    else if (kw.value("return_all_scores", false))
      o.return_all_scores = true;  // transformers 4.x, top_k not given
    if (kw.contains("function_to_apply")) o.function_to_apply = parse_classification_function(kw["function_to_apply"]);
    o.truncation = kw.value("truncation", false);
    TextInput input;
    if (rec["inputs"].is_string()) {
      input.text = rec["inputs"];
    } else {
      input.text = rec["inputs"]["text"];
      input.text_pair = rec["inputs"]["text_pair"].get<std::string>();
    }
    const TextClassifier tc(tokenizer(), make_config(rec["config"]));
    const auto p = tc.prepare(std::span<const TextInput>(&input, 1), o);
    expect_encoding(p.encodings.at(0), rec["encoding"], name);
    const auto got = tc.finish(p, matrix(json::array({rec["logits"]})), o).at(0);
    json expected = rec["expected"];
    if (expected.is_object()) expected = json::array({expected});
    if (expected.at(0).is_array()) expected = expected[0];  // 4.x return_all_scores: [[...]]
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].label, expected[i]["label"].get<std::string>()) << i;
      EXPECT_NEAR(got[i].score, expected[i]["score"].get<double>(), kTol) << i;
    }
  }
}

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

TEST(ZeroShotGolden, MatchesTransformers) {
  for (const json& rec : read_jsonl("zero_shot_classification.jsonl")) {
    const std::string name = rec["name"];
    SCOPED_TRACE(name);
    const json& kw = rec["options"];
    ZeroShotOptions o;
    if (kw["candidate_labels"].is_string())
      o.candidate_labels = parse_candidate_labels(kw["candidate_labels"].get<std::string>());
    else
      o.candidate_labels = kw["candidate_labels"].get<std::vector<std::string>>();
    EXPECT_EQ(o.candidate_labels, rec["candidate_labels"].get<std::vector<std::string>>());
    if (kw.contains("hypothesis_template")) o.hypothesis_template = kw["hypothesis_template"];
    o.multi_label = kw.value("multi_label", false);
    for (size_t i = 0; i < o.candidate_labels.size(); ++i)
      EXPECT_EQ(format_hypothesis(o.hypothesis_template, o.candidate_labels[i]), rec["hypotheses"][i].get<std::string>());
    const ZeroShotClassifier zs(tokenizer(), make_config(rec["config"]));
    const std::string sequence = rec["sequence"];
    const auto p = zs.prepare(std::span<const std::string>(&sequence, 1), o);
    ASSERT_EQ(p.pairs.size(), rec["encodings"].size());
    for (size_t i = 0; i < p.pairs.size(); ++i) expect_encoding(p.pairs[i], rec["encodings"][i], name);
    const ZeroShotResult r = zs.finish(p, matrix(rec["logits"]), o).at(0);
    EXPECT_EQ(r.sequence, rec["expected"]["sequence"].get<std::string>());
    EXPECT_EQ(r.labels, rec["expected"]["labels"].get<std::vector<std::string>>());
    ASSERT_EQ(r.scores.size(), rec["expected"]["scores"].size());
    for (size_t i = 0; i < r.scores.size(); ++i) EXPECT_NEAR(r.scores[i], rec["expected"]["scores"][i].get<double>(), kTol);
  }
}

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
  test::expect_error([&] { zs.prepare(std::vector<std::string>{""}, o); }, {"sequence 1", "empty"});
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

TEST(CrossEncoderGolden, MatchesSentenceTransformers) {
  for (const json& rec : read_jsonl("cross_encoder.jsonl")) {
    const std::string name = rec["name"];
    SCOPED_TRACE(name);
    const json& kw = rec["options"];
    const CrossEncoderConfig cfg = CrossEncoderConfig::from_json_text(rec["config"]["extra"].dump(), "config.json");
    if (name == "predict_untrusted_activation_falls_back") {
      EXPECT_NE(cfg.note.find("not a torch class"), std::string::npos);
    }
    const CrossEncoder ce(tokenizer(), make_config(rec["config"]), cfg);
    std::vector<TextPair> pairs;
    for (const auto& p : rec["pairs"]) pairs.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
    CrossEncoderOptions o;
    o.apply_softmax = kw.value("apply_softmax", false);
    const auto p = ce.prepare(pairs, o);
    ASSERT_EQ(p.encodings.size(), rec["encodings"].size());
    for (size_t i = 0; i < p.encodings.size(); ++i) expect_encoding(p.encodings[i], rec["encodings"][i], name);
    const Matrix scores = ce.finish(p, matrix(rec["logits"]), o);
    const json& expected = rec["expected"];
    if (rec["call"] == "predict") {
      ASSERT_EQ(scores.rows, expected.size());
      for (size_t r = 0; r < scores.rows; ++r)
        for (size_t c = 0; c < scores.cols; ++c)
          EXPECT_NEAR(scores.row(r)[c], expected[r].is_array() ? expected[r][c].get<double>() : expected[r].get<double>(),
                      kTol);
    } else {
      RankOptions ro;
      if (kw.contains("top_k")) ro.top_k = kw["top_k"].get<size_t>();
      ro.return_documents = kw.value("return_documents", false);
      std::vector<std::string> docs;
      for (const auto& pr : pairs) docs.push_back(pr.second);
      const auto ranked = CrossEncoder::rank_scores(scores.data, docs, ro);
      ASSERT_EQ(ranked.size(), expected.size());
      for (size_t i = 0; i < ranked.size(); ++i) {
        EXPECT_EQ(ranked[i].corpus_id, expected[i]["corpus_id"].get<size_t>());
        EXPECT_NEAR(ranked[i].score, expected[i]["score"].get<double>(), kTol);
        EXPECT_EQ(ranked[i].text.has_value(), expected[i].contains("text"));
        if (ranked[i].text) {
          EXPECT_EQ(*ranked[i].text, expected[i]["text"].get<std::string>());
        }
      }
    }
  }
}

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
  test::expect_error([&] { one.prepare(bad); }, {"pair 1 (second text)", "invalid UTF-8"});
  EXPECT_TRUE(CrossEncoder::rank_scores({}, {}, {}).empty());
}

// ---- token-classification

// Our entities against the pipeline's (entity or entity_group, score, word, start, end, index).
void expect_entities(const std::vector<TokenEntity>& got, const json& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const json& x = expected[i];
    const bool grouped = x.contains("entity_group");
    EXPECT_EQ(got[i].entity, x[grouped ? "entity_group" : "entity"].get<std::string>()) << i;
    EXPECT_NEAR(got[i].score, x["score"].get<double>(), kTol) << i;
    EXPECT_EQ(got[i].word, x["word"].get<std::string>()) << i;
    EXPECT_EQ(got[i].start, x["start"].get<int64_t>()) << i;
    EXPECT_EQ(got[i].end, x["end"].get<int64_t>()) << i;
    EXPECT_EQ(got[i].index, grouped ? -1 : x["index"].get<int64_t>()) << i;
  }
}

// Records of text (token_classification*.jsonl) run through a TokenClassifier with `tok`.
void expect_ner_records(const std::vector<json>& records, const Tokenizer& tok) {
  for (const json& rec : records) {
    const std::string name = rec["name"];
    SCOPED_TRACE(name);
    const json& kw = rec["options"];
    TokenClassifyOptions o;
    o.aggregation = parse_aggregation(kw.value("aggregation_strategy", std::string("none")));
    if (kw.contains("ignore_labels")) o.ignore_labels = kw["ignore_labels"].get<std::vector<std::string>>();
    if (kw.contains("stride")) o.stride = kw["stride"].get<size_t>();
    const TokenClassifier ner(tok, make_config(rec["config"]));
    const std::string text = rec["text"];
    const auto p = ner.prepare(text, o);
    ASSERT_EQ(p.windows.size(), rec["windows"].size());
    for (size_t w = 0; w < p.windows.size(); ++w) expect_encoding(p.windows[w], rec["windows"][w], name);
    json rows = json::array();
    for (const auto& window : rec["logits"])
      for (const auto& row : window) rows.push_back(row);
    const auto got = ner.finish(p, matrix(rows), o);
    expect_entities(got, rec["expected"]);
    for (const TokenEntity& e : got) EXPECT_LE(e.byte_end, text.size());
  }
}

// token_classification_stride.jsonl: a stride without an aggregation_strategy (every window's tokens).
TEST(TokenClassifierGolden, MatchesTransformers) {
  std::vector<json> records = read_jsonl("token_classification.jsonl");
  for (json& rec : read_jsonl("token_classification_stride.jsonl")) records.push_back(std::move(rec));
  expect_ner_records(records, tokenizer());
}

// A WordPiece tokenizer (tests/data/hf/wordpiece): transformers tells subwords by their "##" token
// strings and joins a group's words with the WordPiece decoder (token_classification_wordpiece.jsonl).
TEST(TokenClassifierGolden, WordPieceTokenizerMatchesTransformers) {
  const auto records = read_jsonl("token_classification_wordpiece.jsonl");
  ASSERT_GE(records.size(), 20u);
  expect_ner_records(records, Tokenizer::from_dir(std::string(ROBERTA_TEST_DATA) + "/hf/wordpiece"));
}

// A SentencePiece Unigram tokenizer (tests/data/hf/unigram): no continuing_subword_prefix, so
// transformers' space heuristic tells subwords; groups decoded with the Metaspace decoder; <unk>
// tokens take their text; offsets of "▁" tokens include the space.
TEST(TokenClassifierGolden, UnigramTokenizerMatchesTransformers) {
  const auto records = read_jsonl("token_classification_unigram.jsonl");
  ASSERT_GE(records.size(), 20u);
  expect_ner_records(records, Tokenizer::from_dir(std::string(ROBERTA_TEST_DATA) + "/hf/unigram"));
}

// The same tokenizer uncased (BertNormalizer's lowercase, so strip_accents too): the words are
// transformers' lowercased, accent-free tokens joined; offsets into the original text.
TEST(TokenClassifierGolden, UncasedWordPieceTokenizerMatchesTransformers) {
  const auto records = read_jsonl("token_classification_wordpiece_uncased.jsonl");
  ASSERT_GE(records.size(), 10u);
  std::ifstream in(std::string(ROBERTA_TEST_DATA) + "/hf/wordpiece/tokenizer.json");
  json doc = json::parse(in);
  doc["normalizer"]["lowercase"] = true;
  expect_ner_records(records, Tokenizer::from_tokenizer_json_text(doc.dump(), "uncased"));
}

// transformers' is_split_into_words=True: token_classification_words.jsonl.
TEST(TokenClassifierGolden, SplitIntoWordsMatchesTransformers) {
  std::ifstream in(kTokenizerDir + "/tokenizer.json");
  const json base = json::parse(in);
  size_t sentences = 0;
  for (const json& rec : read_jsonl("token_classification_words.jsonl")) {
    const std::string name = rec["name"];
    SCOPED_TRACE(name);
    json doc = base;
    for (const json& p : rec["tokenizer_patch"]) doc[json::json_pointer(p[0].get<std::string>())] = p[1];
    const Tokenizer tok = Tokenizer::from_tokenizer_json_text(doc.dump(), name);
    const json& kw = rec["options"];
    TokenClassifyOptions o;
    o.aggregation = parse_aggregation(kw.value("aggregation_strategy", std::string("none")));
    if (kw.contains("ignore_labels")) o.ignore_labels = kw["ignore_labels"].get<std::vector<std::string>>();
    if (kw.contains("stride")) o.stride = kw["stride"].get<size_t>();
    const std::string delimiter = kw.value("delimiter", std::string(" "));
    const TokenClassifier ner(tok, make_config(rec["config"]));
    ASSERT_EQ(rec["sentences"].size(), rec["expected"].size());
    for (size_t s = 0; s < rec["sentences"].size(); ++s) {
      const json& sentence = rec["sentences"][s];
      const auto words = sentence["words"].get<std::vector<std::string>>();
      const auto p = ner.prepare_words(words, delimiter, o);
      std::string joined;
      for (size_t i = 0; i < words.size(); ++i) joined += (i ? delimiter : "") + words[i];
      ASSERT_EQ(p.text, joined);
      ASSERT_EQ(p.windows.size(), sentence["windows"].size());
      for (size_t w = 0; w < p.windows.size(); ++w) {
        const json& hf = sentence["windows"][w];
        const Encoding& e = p.windows[w];
        ASSERT_EQ(e.ids, hf["ids"].get<std::vector<int32_t>>()) << w;
        EXPECT_EQ(json(e.word_ids), hf["word_ids"]) << w;
        for (size_t t = 0; t < e.size(); ++t) {
          const int32_t word = e.word_ids[t];
          if (word < 0) continue;
          // HF's offsets are into each word, ours into the joined text (gather_pre_entities adds the
          // word's start: the code points of the words and delimiters before it)
          std::string before;
          for (int32_t i = 0; i < word; ++i) before += words[static_cast<size_t>(i)] + delimiter;
          int64_t cps = 0;
          for (unsigned char c : before) cps += (c & 0xC0) != 0x80;
          EXPECT_EQ(e.offsets[t].first, hf["offsets"][t][0].get<int64_t>() + cps) << w << " token " << t;
          EXPECT_EQ(e.offsets[t].second, hf["offsets"][t][1].get<int64_t>() + cps) << w << " token " << t;
          EXPECT_EQ(p.text.substr(e.byte_offsets[t].first, e.byte_offsets[t].second - e.byte_offsets[t].first),
                    pipeline_test_slice(p.text, e.offsets[t].first, e.offsets[t].second));
        }
      }
      json rows = json::array();
      for (const auto& window : sentence["logits"])
        for (const auto& row : window) rows.push_back(row);
      const auto got = rows.empty() ? std::vector<TokenEntity>{} : ner.finish(p, matrix(rows), o);
      expect_entities(got, rec["expected"][s]);
      ++sentences;
    }
  }
  EXPECT_GE(sentences, 20u);
}

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
  test::expect_error([&] { ner.prepare(std::string("\xe2\x82"), {}); }, {"text", "invalid UTF-8"});
  test::expect_error([] { parse_aggregation("mean"); }, {"mean", "average"});
  EXPECT_TRUE(ner.finish(ner.prepare("", {}), Matrix(2, 2), {}).empty());
}

// ---- question-answering

// Each record's windows, and the answers of its logits, against transformers' (with `tok`).
void expect_qa_records(const std::vector<json>& records, const Tokenizer& tok) {
  for (const json& rec : records) {
    const std::string name = rec["name"];
    SCOPED_TRACE(name);
    const json& kw = rec["options"];
    QuestionAnswerOptions o;
    o.top_k = kw.value("top_k", size_t{1});
    if (kw.contains("doc_stride")) o.doc_stride = kw["doc_stride"].get<size_t>();
    if (kw.contains("max_seq_len")) o.max_seq_len = kw["max_seq_len"].get<size_t>();
    o.max_answer_len = kw.value("max_answer_len", size_t{15});
    o.handle_impossible_answer = kw.value("handle_impossible_answer", false);
    o.align_to_words = kw.value("align_to_words", true);
    const QuestionAnswerer qa(tok, make_config({{"id2label", {"LABEL_0", "LABEL_1"}}}));
    const std::string context = rec["context"];
    const auto p = qa.prepare(rec["question"], context, o);
    ASSERT_EQ(p.windows.size(), rec["windows"].size());
    for (size_t w = 0; w < p.windows.size(); ++w) {
      expect_encoding(p.windows[w], rec["windows"][w], name);
      // each of HF's windows is a pair (the question, then its part of the context): alignment
      // queries on sequence 1 search the context only
      const auto seqs = rec["windows"][w]["sequence_ids"].get<std::vector<int>>();
      EXPECT_EQ(p.windows[w].n_sequences, *std::max_element(seqs.begin(), seqs.end()) + 1) << w;
    }
    SpanLogits logits;
    for (const auto& w : rec["logits"]) {
      for (const auto& x : w["start"]) logits.start.push_back(x.get<float>());
      for (const auto& x : w["end"]) logits.end.push_back(x.get<float>());
    }
    const auto got = qa.finish(p, logits, o);
    const json& expected = rec["expected"];
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].answer, expected[i]["answer"].get<std::string>()) << i;
      EXPECT_EQ(got[i].start, expected[i]["start"].get<int64_t>()) << i;
      EXPECT_EQ(got[i].end, expected[i]["end"].get<int64_t>()) << i;
      EXPECT_NEAR(got[i].score, expected[i]["score"].get<double>(), kTol) << i;
      EXPECT_EQ(context.substr(got[i].byte_start, got[i].byte_end - got[i].byte_start), got[i].answer) << i;
    }
  }
}

TEST(QuestionAnswererGolden, MatchesTransformers) {
  expect_qa_records(read_jsonl("question_answering.jsonl"), tokenizer());
}

// A SentencePiece Unigram tokenizer (tests/data/hf/unigram, XLM-RoBERTa's kind): answers start with
// the space before their first word (its "▁" token's offsets); unknown characters, NFKC forms.
TEST(QuestionAnswererGolden, UnigramTokenizerMatchesTransformers) {
  const auto records = read_jsonl("question_answering_unigram.jsonl");
  ASSERT_GE(records.size(), 10u);
  expect_qa_records(records, Tokenizer::from_dir(std::string(ROBERTA_TEST_DATA) + "/hf/unigram"));
}

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

// Windows of a long text (token classification's stride) and of a long context (QA's doc_stride)
// against HF's overflowing windows (tools/hf_goldens/gen_variant_goldens.js), each post-processed on
// its own there: with add_prefix_space, a window's first text token keeps its leading space.
TEST(Windows, EqualHfOverflowingWindowsWithAndWithoutAddPrefixSpace) {
  std::ifstream in(std::string(ROBERTA_TEST_DATA) + "/hf/variants.jsonl");
  const json base = json::parse(std::ifstream(kTokenizerDir + "/tokenizer.json"));
  size_t compared = 0;
  for (std::string line; std::getline(in, line);) {
    const json r = json::parse(line);
    if (!r.contains("windows_of")) continue;
    json doc = base;
    for (const json& p : r["patch"]) doc[json::json_pointer(p[0].get<std::string>())] = p[1];
    const Tokenizer tok = Tokenizer::from_tokenizer_json_text(doc.dump(), r["variant"]);
    const json& c = r["windows_of"];
    std::vector<Encoding> windows;
    if (c["b"].is_null()) {
      const TokenClassifier tc(tok, make_config({{"id2label", {"O", "B-X"}}}));
      TokenClassifyOptions o;
      o.aggregation = Aggregation::kSimple;
      o.max_length = c["max_length"];
      o.stride = c["stride"].get<size_t>();
      windows = tc.prepare(c["a"].get<std::string>(), o).windows;
    } else {
      const QuestionAnswerer qa(tok, make_config({{"id2label", {"LABEL_0", "LABEL_1"}}}));
      QuestionAnswerOptions o;
      o.max_seq_len = c["max_length"].get<size_t>();
      o.doc_stride = c["stride"].get<size_t>();
      windows = qa.prepare(c["a"].get<std::string>(), c["b"].get<std::string>(), o).windows;
    }
    const std::string what = r["variant"].get<std::string>() + " " + c.dump();
    ASSERT_EQ(windows.size(), r["windows"].size()) << what;
    for (size_t w = 0; w < windows.size(); ++w) {
      const json& want = r["windows"][w];
      EXPECT_EQ(json(windows[w].ids), want["ids"]) << what << " window " << w;
      json offsets = json::array();
      for (const auto& [b, e] : windows[w].offsets) offsets.push_back({b, e});
      EXPECT_EQ(offsets, want["offsets"]) << what << " window " << w;
      std::vector<int> seq(windows[w].sequence_ids.begin(), windows[w].sequence_ids.end());
      EXPECT_EQ(json(seq), want["sequence_ids"]) << what << " window " << w;
      ++compared;
    }
  }
  EXPECT_GE(compared, 8u);
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

// ---- run(): the whole pipeline on small random-weight checkpoints with each head

using test::write_random_model;

TEST(PipelinesRun, SequenceHeads) {
  test::TempDir dir;
  write_random_model(dir.path(), "sequence", {"CONTRADICTION", "NEUTRAL", "ENTAILMENT"});
  const TextClassifier tc = TextClassifier::load(dir.path());
  const std::vector<TextInput> inputs{{"A first text.", std::nullopt}, {"A man plays.", "Someone makes music."}};
  TextClassifyOptions all;
  all.top_k = std::nullopt;
  const auto batch = tc(inputs, all);
  ASSERT_EQ(batch.size(), 2u);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto alone = tc(std::span<const TextInput>(&inputs[i], 1), all).at(0);
    ASSERT_EQ(alone.size(), 3u);
    double sum = 0;
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(alone[k].label, batch[i][k].label);
      EXPECT_NEAR(alone[k].score, batch[i][k].score, 1e-5);  // packed batch == one by one
      sum += alone[k].score;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }

  const ZeroShotClassifier zs = ZeroShotClassifier::load(dir.path());
  ZeroShotOptions zo;
  zo.candidate_labels = {"sports", "politics", "music"};
  const ZeroShotResult r = zs("The band played all night.", zo);
  ASSERT_EQ(r.labels.size(), 3u);
  EXPECT_NEAR(r.scores[0] + r.scores[1] + r.scores[2], 1.0, 1e-5);
  EXPECT_GE(r.scores[0], r.scores[2]);

  const CrossEncoder ce = CrossEncoder::load(dir.path());  // 3 labels: identity, no rank
  const std::vector<TextPair> pairs{{"q", "a"}, {"q", "b"}, {"q", "c"}};
  CrossEncoderOptions small_batches;
  small_batches.batch_size = 2;
  const Matrix m1 = ce.predict(pairs), m2 = ce.predict(pairs, small_batches);
  ASSERT_EQ(m1.rows, 3u);
  for (size_t i = 0; i < m1.data.size(); ++i) EXPECT_NEAR(m1.data[i], m2.data[i], 1e-5);
  const std::vector<std::string> docs{"a"};
  test::expect_error([&] { ce.rank("q", docs); }, {"one label"});
  try {
    TokenClassifier::load(dir.path());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("so it cannot classify tokens"), std::string::npos) << e.what();
  }
}

// Loading overlaps the tokenizer with the model where the pool has more than one thread; the
// errors stay those of loading one after the other: the tokenizer's first, else the model's.
TEST(PipelinesRun, LoadReportsTheTokenizersErrorFirstThenTheModels) {
  test::TempDir good, no_tokenizer, bad_model, neither;
  write_random_model(good.path(), "sequence", {"NEG", "POS"});
  for (const auto* dir : {&no_tokenizer, &bad_model, &neither}) {
    std::filesystem::copy_file(good.path() / "config.json", dir->path() / "config.json");
    std::filesystem::copy_file(good.path() / "model.safetensors", dir->path() / "model.safetensors");
  }
  std::filesystem::copy_file(good.path() / "tokenizer.json", bad_model.path() / "tokenizer.json");
  test::write_text(bad_model.path() / "model.safetensors", "tiny");
  test::write_text(neither.path() / "model.safetensors", "tiny");
  for (const unsigned threads : {1u, 2u}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    set_num_threads(threads);
    EXPECT_EQ(TextClassifier::load(good.path())(std::vector<TextInput>{{"Fine.", std::nullopt}}).at(0).size(), 1u);
    EXPECT_EQ(Embedder::load(good.path()).dimension(), 8u);
    test::expect_error([&] { TextClassifier::load(no_tokenizer.path()); }, {"no tokenizer found"});
    test::expect_error([&] { Embedder::load(neither.path()); }, {"no tokenizer found"});
    test::expect_error([&] { CrossEncoder::load(bad_model.path()); }, {"model.safetensors", "too small"});
    test::expect_error([&] { QuestionAnswerer::load(bad_model.path()); }, {"model.safetensors", "too small"});
  }
  set_num_threads(0);
}

TEST(PipelinesRun, RerankerRank) {
  test::TempDir dir;
  write_random_model(dir.path(), "sequence", {"LABEL_0"});
  const CrossEncoder ce = CrossEncoder::load(dir.path());
  const std::vector<std::string> docs{"Berlin has 3.5 million people.", "Paris.", "Berlin is big.", "Cats."};
  RankOptions ro;
  ro.top_k = 3;
  ro.return_documents = true;
  const auto ranked = ce.rank("How many people live in Berlin?", docs, ro);
  ASSERT_EQ(ranked.size(), 3u);
  std::vector<TextPair> pairs;
  for (const auto& d : docs) pairs.emplace_back("How many people live in Berlin?", d);
  const Matrix scores = ce.predict(pairs);
  for (size_t i = 0; i < ranked.size(); ++i) {
    EXPECT_NEAR(ranked[i].score, scores.row(ranked[i].corpus_id)[0], 1e-6);
    EXPECT_EQ(*ranked[i].text, docs[ranked[i].corpus_id]);
    EXPECT_GT(ranked[i].score, 0.0f);  // sigmoid
    EXPECT_LT(ranked[i].score, 1.0f);
    if (i) {
      EXPECT_GE(ranked[i - 1].score, ranked[i].score);
    }
  }
}

TEST(PipelinesRun, TokenAndQuestionAnsweringHeads) {
  test::TempDir ner_dir, qa_dir;
  write_random_model(ner_dir.path(), "token", {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"});
  write_random_model(qa_dir.path(), "qa", {"LABEL_0", "LABEL_1"});
  std::string text;
  for (int i = 0; i < 12; ++i) text += "Angela Merkel met Emmanuel Macron in Zürich. ";
  const TokenClassifier ner = TokenClassifier::load(ner_dir.path());
  TokenClassifyOptions o;
  o.aggregation = Aggregation::kAverage;
  o.stride = 8;
  o.ignore_labels = {};
  const auto p = ner.prepare(text, o);
  EXPECT_GT(p.windows.size(), 2u);  // 64-token windows over ~130 tokens
  const auto entities = ner.finish(p, ner.run(p), o);
  EXPECT_FALSE(entities.empty());
  for (const TokenEntity& e : entities) {
    EXPECT_LT(e.start, e.end);
    EXPECT_EQ(text.substr(e.byte_start, e.byte_end - e.byte_start), pipeline_test_slice(text, e.start, e.end));
  }

  const QuestionAnswerer qa = QuestionAnswerer::load(qa_dir.path());
  QuestionAnswerOptions qo;
  qo.top_k = 3;
  qo.handle_impossible_answer = true;
  const auto prepared = qa.prepare("Who met Macron?", text, qo);
  EXPECT_GT(prepared.windows.size(), 2u);
  const SpanLogits logits = qa.run(prepared);
  EXPECT_EQ(logits.start.size(), logits.end.size());
  const auto answers = qa.finish(prepared, logits, qo);
  ASSERT_EQ(answers.size(), 3u);
  for (const QuestionAnswer& a : answers) {
    EXPECT_EQ(text.substr(a.byte_start, a.byte_end - a.byte_start), a.answer);
    EXPECT_GE(a.score, 0.0f);
  }
  const auto direct = qa("Who met Macron?", text, qo);
  ASSERT_EQ(direct.size(), answers.size());
  for (size_t i = 0; i < direct.size(); ++i) {
    EXPECT_EQ(direct[i].answer, answers[i].answer);
    EXPECT_NEAR(direct[i].score, answers[i].score, 1e-6);
  }
}
