// The task pipelines against Hugging Face's results (tests/data/pipelines, gen_pipeline_goldens.py):
// prepare must give HF's ids and windows, and finish on HF's logits its labels, entities, spans, scores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pipelines_test_util.h"
#include "roberta/pipelines.h"

namespace {

using json = nlohmann::json;
using namespace roberta;
using namespace roberta::test::pipelines;

const std::string kGoldens = std::string(ROBERTA_TEST_DATA) + "/pipelines/";
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

}  // namespace
