// The task pipelines run whole (load, prepare, run, finish) on small random-weight checkpoints with
// each head: a packed batch against one input at a time, loading errors, ranking, long texts.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pipelines_test_util.h"
#include "random_model.h"
#include "roberta/pipelines.h"
#include "roberta/threads.h"
#include "test_util.h"

namespace {

using namespace roberta;
using roberta::test::pipelines::pipeline_test_slice;

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

// run_batched: the windows of many inputs share forward passes; each input gets what it gets
// alone (a misplaced row would change its answer), and a bad input only its own error.
TEST(PipelinesRun, RunBatchedGivesEachInputItsAnswerOrItsOwnError) {
  test::TempDir ner_dir, qa_dir;
  write_random_model(ner_dir.path(), "token", {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"});
  write_random_model(qa_dir.path(), "qa", {"LABEL_0", "LABEL_1"});
  std::string long_text;
  for (int i = 0; i < 12; ++i) long_text += "Angela Merkel met Emmanuel Macron in Zürich. ";
  const TokenClassifier ner = TokenClassifier::load(ner_dir.path());
  TokenClassifyOptions o;
  o.aggregation = Aggregation::kNone;
  o.stride = 8;
  o.ignore_labels = {};
  const std::vector<std::string> texts{long_text, "bad \xFF byte", "Macron in Paris.", long_text.substr(0, 90)};
  const auto results = ner.run_batched(texts, o);
  ASSERT_EQ(results.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    SCOPED_TRACE(i);
    if (i == 1) {
      ASSERT_FALSE(results[i].ok());
      EXPECT_NE(std::string(results[i].error->what()).find("invalid UTF-8"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(results[i].ok()) << results[i].error->what();
    const auto alone = ner(texts[i], o);
    ASSERT_EQ(results[i].value->size(), alone.size());
    ASSERT_FALSE(alone.empty());
    for (size_t k = 0; k < alone.size(); ++k) {
      EXPECT_EQ((*results[i].value)[k].entity, alone[k].entity);
      EXPECT_EQ((*results[i].value)[k].index, alone[k].index);
      EXPECT_EQ((*results[i].value)[k].start, alone[k].start);
      EXPECT_NEAR((*results[i].value)[k].score, alone[k].score, 1e-6);
    }
  }

  const QuestionAnswerer qa = QuestionAnswerer::load(qa_dir.path());
  QuestionAnswerOptions qo;
  qo.top_k = 2;
  const std::vector<QuestionAnswerer::Input> inputs{
      {"Who met Macron?", long_text}, {"", long_text}, {"Where?", "Macron in Paris."}};
  const auto answers = qa.run_batched(inputs, qo);
  ASSERT_EQ(answers.size(), inputs.size());
  ASSERT_FALSE(answers[1].ok());
  EXPECT_NE(std::string(answers[1].error->what()).find("question is empty"), std::string::npos);
  for (size_t i : {size_t{0}, size_t{2}}) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(answers[i].ok()) << answers[i].error->what();
    const auto alone = qa(inputs[i].question, inputs[i].context, qo);
    ASSERT_EQ(answers[i].value->size(), alone.size());
    for (size_t k = 0; k < alone.size(); ++k) {
      EXPECT_EQ((*answers[i].value)[k].answer, alone[k].answer);
      EXPECT_NEAR((*answers[i].value)[k].score, alone[k].score, 1e-6);
    }
  }
}

// The same for the pipelines with one or more rows per input (a sequence's labels, a zero-shot
// sequence's label pairs, a pair's scores, a text's masks): errors are about_input(i) of the bad
// input alone, and a bad input shifts no other input's rows.
TEST(PipelinesRun, RunBatchedOfSequencePipelines) {
  test::TempDir seq_dir, mlm_dir;
  write_random_model(seq_dir.path(), "sequence", {"CONTRADICTION", "NEUTRAL", "ENTAILMENT"});
  write_random_model(mlm_dir.path(), "mlm", {});
  const auto expect_error = [](const auto& result, size_t input, const std::string& detail) {
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error->input(), input);
    EXPECT_EQ(result.error->detail(), detail);
    EXPECT_EQ(std::string(result.error->what()), "input " + std::to_string(input + 1) + ": " + detail);
  };

  const TextClassifier tc = TextClassifier::load(seq_dir.path());
  TextClassifyOptions all;
  all.top_k = std::nullopt;
  const std::vector<TextInput> inputs{{"A first text.", std::nullopt}, {"bad \xFF", std::nullopt},
                                      {"A man plays.", "Someone makes music."}};
  const auto labels = tc.run_batched(inputs, all);
  ASSERT_EQ(labels.size(), 3u);
  expect_error(labels[1], 1, "invalid UTF-8 at byte 4");
  for (size_t i : {size_t{0}, size_t{2}}) {
    ASSERT_TRUE(labels[i].ok());
    const auto alone = tc(std::span<const TextInput>(&inputs[i], 1), all).at(0);
    ASSERT_EQ(labels[i].value->size(), alone.size());
    for (size_t k = 0; k < alone.size(); ++k) {
      EXPECT_EQ((*labels[i].value)[k].label, alone[k].label);
      EXPECT_NEAR((*labels[i].value)[k].score, alone[k].score, 1e-6);
    }
  }

  const ZeroShotClassifier zs = ZeroShotClassifier::load(seq_dir.path());
  ZeroShotOptions zo;
  zo.candidate_labels = {"sports", "politics", "music"};
  const std::vector<std::string> sequences{"The band played all night.", "", "The match ended late."};
  const auto zero = zs.run_batched(sequences, zo);
  ASSERT_EQ(zero.size(), 3u);
  expect_error(zero[1], 1, "the text is empty");
  for (size_t i : {size_t{0}, size_t{2}}) {
    ASSERT_TRUE(zero[i].ok());
    const ZeroShotResult alone = zs(sequences[i], zo);
    EXPECT_EQ(zero[i].value->labels, alone.labels);
    for (size_t k = 0; k < alone.scores.size(); ++k) EXPECT_NEAR(zero[i].value->scores[k], alone.scores[k], 1e-6);
  }
  zo.candidate_labels.clear();  // the options' error is the call's
  test::expect_error([&] { zs.run_batched(sequences, zo); }, {"at least one candidate label"});

  const CrossEncoder ce = CrossEncoder::load(seq_dir.path());
  const std::vector<TextPair> pairs{{"q", "a"}, {"q", "\xC3"}, {"q", "c"}};
  const auto scores = ce.run_batched(pairs);
  ASSERT_EQ(scores.size(), 3u);
  expect_error(scores[1], 1, "second text: invalid UTF-8 at byte 0");
  for (size_t i : {size_t{0}, size_t{2}}) {
    ASSERT_TRUE(scores[i].ok());
    const Matrix alone = ce.predict(std::span<const TextPair>(&pairs[i], 1));
    ASSERT_EQ(scores[i].value->size(), alone.cols);
    for (size_t k = 0; k < alone.cols; ++k) EXPECT_NEAR((*scores[i].value)[k], alone.row(0)[k], 1e-6);
  }
  const std::vector<TextPair> many{{"q", "a"}, {"q", "b"}, {"q", "\xFF"}};  // predict counts across batches
  CrossEncoderOptions pairs_of_two;
  pairs_of_two.batch_size = 2;
  test::expect_error([&] { ce.predict(many, pairs_of_two); }, {"input 3: second text: invalid UTF-8"});

  const FillMask fill = FillMask::load(mlm_dir.path());
  const std::vector<std::string> texts{"Two <mask> and one <mask>.", "no mask here", "The <mask> sat."};
  const auto filled = fill.run_batched(texts);
  ASSERT_EQ(filled.size(), 3u);
  expect_error(filled[1], 1, "no <mask> in the text");
  for (size_t i : {size_t{0}, size_t{2}}) {
    ASSERT_TRUE(filled[i].ok());
    const auto alone = fill(texts[i]);
    ASSERT_EQ(filled[i].value->size(), alone.size());
    for (size_t m = 0; m < alone.size(); ++m)
      for (size_t k = 0; k < alone[m].size(); ++k) {
        EXPECT_EQ((*filled[i].value)[m][k].token, alone[m][k].token);
        EXPECT_NEAR((*filled[i].value)[m][k].score, alone[m][k].score, 1e-6);
      }
  }
}

}  // namespace
