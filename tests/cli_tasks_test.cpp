// Tests of the `roberta` task commands (classify, zero-shot, rerank, ner, qa): their --json output
// against the library run in-process on the same inputs, and their input and usage errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cli_test_util.h"
#include "roberta/roberta.h"

namespace {

using json = nlohmann::json;
using namespace roberta::test::cli;

// ---------------------------------------------------------------- task commands
//
// Each command's --json output against the library class run in-process on the same inputs with
// the same options (the library's agreement with Hugging Face is the golden tests' business; here:
// the options reach the library, the keys are HF's, in HF's order).

using ordered = nlohmann::ordered_json;
const std::string kNli = kFixtures + "/nli";
const std::string kReranker = kFixtures + "/reranker";
const std::string kNer = kFixtures + "/ner";
const std::string kQa = kFixtures + "/qa";

std::vector<std::string> keys(const ordered& object) {
  std::vector<std::string> out;
  for (const auto& [key, value] : object.items()) out.push_back(key);
  return out;
}

std::vector<ordered> json_lines(const std::string& out) {
  std::vector<ordered> v;
  for (const auto& l : lines_of(out)) v.push_back(ordered::parse(l));
  return v;
}

constexpr double kScoreTol = 1e-5;

void expect_label_scores(const ordered& got, const std::vector<roberta::LabelScore>& want, const std::string& what) {
  ASSERT_TRUE(got.is_array()) << what << ": " << got.dump();
  ASSERT_EQ(got.size(), want.size()) << what << ": " << got.dump();
  for (size_t j = 0; j < want.size(); ++j) {
    EXPECT_EQ(keys(got[j]), (std::vector<std::string>{"label", "score"})) << what;
    EXPECT_EQ(got[j]["label"], want[j].label) << what << " rank " << j;
    EXPECT_NEAR(got[j]["score"].get<double>(), want[j].score, kScoreTol) << what << " rank " << j;
  }
}

TEST(CliTasks, ClassifyEqualsTheLibrary) {
  const auto classifier = roberta::TextClassifier::load(kSentiment);
  const std::vector<roberta::TextInput> inputs = {
      {"I loved this film.", std::nullopt}, {"The plot was thin.", std::nullopt}, {"A man plays.", "Music."}};
  // Texts from stdin, --top-k 2 --function sigmoid.
  roberta::TextClassifyOptions o;
  o.top_k = 2;
  o.function_to_apply = roberta::ClassificationFunction::kSigmoid;
  Result r = run({"classify", "--model", kSentiment, "--json", "--top-k", "2", "--function", "sigmoid"},
                 inputs[0].text + "\n" + inputs[1].text + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  auto want = classifier(std::span(inputs.data(), 2), o);
  auto got = json_lines(r.out);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) expect_label_scores(got[i], want[i], "top-k 2, input " + std::to_string(i));
  // JSON lines (a string, a pair, an object), every label, the default function (softmax here).
  o = {};
  o.top_k = std::nullopt;
  r = run({"classify", "--model", kSentiment, "--json", "--all", "--input-format", "jsonl"},
          "\"I loved this film.\"\n[\"A man plays.\", \"Music.\"]\n{\"text\": \"The plot was thin.\"}\n");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<roberta::TextInput> ordered_inputs = {inputs[0], inputs[2], inputs[1]};
  want = classifier(ordered_inputs, o);
  got = json_lines(r.out);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) expect_label_scores(got[i], want[i], "all, input " + std::to_string(i));
  // Without --top-k or --all, a pair's answer is its best label as an object, a text's a list of it,
  // as transformers' TextClassificationPipeline.__call__ wraps only a str input's result.
  r = run({"classify", "--model", kSentiment, "--json", "--input-format", "jsonl"},
          "{\"text\": \"A man plays.\", \"text_pair\": \"Music.\"}\n\"I loved this film.\"\n");
  ASSERT_EQ(r.status, 0) << r.err;
  got = json_lines(r.out);
  ASSERT_EQ(got.size(), 2u);
  want = classifier(std::vector<roberta::TextInput>{inputs[2], inputs[0]}, {});
  ASSERT_TRUE(got[0].is_object()) << got[0].dump();
  expect_label_scores(ordered::array({got[0]}), want[0], "a pair, default top-k");
  expect_label_scores(got[1], want[1], "a text, default top-k");
  // Arguments as texts; the default top-k is 1.
  r = run({"classify", "--model", kSentiment, "--json", "--function", "none", inputs[1].text});
  ASSERT_EQ(r.status, 0) << r.err;
  o = {};
  o.function_to_apply = roberta::ClassificationFunction::kNone;
  expect_label_scores(json_lines(r.out).at(0), classifier(std::span(inputs.data() + 1, 1), o)[0], "function none");
  // The readable table names the labels.
  r = run({"classify", "--model", kSentiment, "--all", inputs[0].text});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* label : {"NEGATIVE", "NEUTRAL", "POSITIVE"}) EXPECT_NE(r.out.find(label), std::string::npos) << r.out;
}

TEST(CliTasks, ZeroShotEqualsTheLibrary) {
  const auto zs = roberta::ZeroShotClassifier::load(kNli);
  const std::vector<std::string> texts = {"My phone broke, I need help now!", "The weather is nice."};
  for (const bool multi : {false, true}) {
    roberta::ZeroShotOptions o;
    o.candidate_labels = roberta::parse_candidate_labels("urgent, phone,not urgent");
    o.hypothesis_template = "The topic is {}.";
    o.multi_label = multi;
    std::vector<std::string> args = {"zero-shot", "--model", kNli, "--json", "--labels", "urgent, phone,not urgent",
                                     "--template", "The topic is {}."};
    if (multi) args.push_back("--multi-label");
    const Result r = run(args, texts[0] + "\n" + texts[1] + "\n");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto want = zs(texts, o);
    const auto got = json_lines(r.out);
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(keys(got[i]), (std::vector<std::string>{"sequence", "labels", "scores"}));
      EXPECT_EQ(got[i]["sequence"], want[i].sequence);
      EXPECT_EQ(got[i]["labels"].get<std::vector<std::string>>(), want[i].labels) << multi;
      ASSERT_EQ(got[i]["scores"].size(), want[i].scores.size());
      for (size_t j = 0; j < want[i].scores.size(); ++j)
        EXPECT_NEAR(got[i]["scores"][j].get<double>(), want[i].scores[j], kScoreTol) << multi << " " << i << " " << j;
    }
  }
  // A JSON line may bring its own labels.
  const Result r = run({"zero-shot", "--model", kNli, "--json", "--input-format", "jsonl"},
                       "{\"sequence\": \"The weather is nice.\", \"candidate_labels\": [\"sun\", \"rain\"]}\n");
  ASSERT_EQ(r.status, 0) << r.err;
  roberta::ZeroShotOptions o;
  o.candidate_labels = {"sun", "rain"};
  const auto want = zs(texts[1], o);
  const auto got = json_lines(r.out).at(0);
  EXPECT_EQ(got["labels"].get<std::vector<std::string>>(), want.labels);
  EXPECT_NEAR(got["scores"][0].get<double>(), want.scores[0], kScoreTol);
}

TEST(CliTasks, RerankEqualsTheLibrary) {
  const auto ce = roberta::CrossEncoder::load(kReranker);
  const std::string query = "How many people live in Berlin?";
  const std::vector<std::string> docs = {"Berlin has 3.5 million people.", "Paris is in France.", "Berlin is big.",
                                         "I like trains."};
  roberta::RankOptions o;
  o.top_k = 3;
  o.return_documents = true;
  const auto want = ce.rank(query, docs, o);
  Result r = run({"rerank", "--model", kReranker, "--json", "--query", query, "--top-k", "3", "--return-documents",
                  "--batch-size", "3"},
                 docs[0] + "\n" + docs[1] + "\n" + docs[2] + "\n" + docs[3] + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(lines_of(r.out).size(), 1u);
  const ordered got = ordered::parse(r.out);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(keys(got[i]), (std::vector<std::string>{"corpus_id", "score", "text"}));
    EXPECT_EQ(got[i]["corpus_id"].get<size_t>(), want[i].corpus_id) << i;
    EXPECT_NEAR(got[i]["score"].get<double>(), want[i].score, kScoreTol) << i;
    EXPECT_EQ(got[i]["text"], *want[i].text);
  }
  // Documents as arguments, without texts.
  r = run({"rerank", "--model", kReranker, "--json", "--query", query, docs[0], docs[1]});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(keys(ordered::parse(r.out)[0]), (std::vector<std::string>{"corpus_id", "score"}));
  // --pairs: CrossEncoder.predict, one score per line.
  r = run({"rerank", "--model", kReranker, "--pairs"},
          "[\"" + query + "\", \"" + docs[0] + "\"]\n[\"" + query + "\", \"" + docs[3] + "\"]\n");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<roberta::TextPair> pairs = {{query, docs[0]}, {query, docs[3]}};
  const roberta::Matrix scores = ce.predict(pairs);
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(std::stod(lines[i]), scores.row(i)[0], kScoreTol) << lines[i];
  // A model with several labels: a list per pair with --pairs; ranking is refused.
  r = run({"rerank", "--model", kSentiment, "--pairs", "--json", "[\"a\", \"b\"]"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ordered::parse(r.out).size(), 3u) << r.out;
  r = run({"rerank", "--model", kSentiment, "--query", "q", "a"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("ranking needs a model with one label; this one has 3"), std::string::npos) << r.err;
}

TEST(CliTasks, NerEqualsTheLibrary) {
  const auto ner = roberta::TokenClassifier::load(kNer);
  const std::string a = "Angela Merkel visited New York.", b = "Ein café in Zürich, then home to Berlin by train.";
  // No aggregation (HF's default): one entity per token, every label kept with --ignore-labels "".
  roberta::TokenClassifyOptions o;
  o.ignore_labels = {};
  Result r = run({"ner", "--model", kNer, "--json", "--ignore-labels", ""}, a + "\n" + b + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  auto got = json_lines(r.out);
  ASSERT_EQ(got.size(), 2u);
  size_t checked = 0;
  for (size_t i = 0; i < 2; ++i) {
    const auto want = ner(i ? b : a, o);
    ASSERT_EQ(got[i].size(), want.size()) << i;
    for (size_t j = 0; j < want.size(); ++j, ++checked) {
      const ordered& e = got[i][j];
      EXPECT_EQ(keys(e), (std::vector<std::string>{"entity", "score", "index", "word", "start", "end"}));
      EXPECT_EQ(e["entity"], want[j].entity);
      EXPECT_NEAR(e["score"].get<double>(), want[j].score, kScoreTol);
      EXPECT_EQ(e["index"].get<int64_t>(), want[j].index);
      EXPECT_EQ(e["word"], want[j].word);
      EXPECT_EQ(e["start"].get<int64_t>(), want[j].start);
      EXPECT_EQ(e["end"].get<int64_t>(), want[j].end);
    }
  }
  EXPECT_GE(checked, 15u);
  // Aggregation with windows: --stride 3 --max-length 10 on the longer text.
  o = {};
  o.aggregation = roberta::Aggregation::kAverage;
  o.stride = 3;
  o.max_length = 10;
  o.ignore_labels = {"O", "LOC"};  // with an aggregation, group labels
  const auto want = ner(b, o);
  r = run({"ner", "--model", kNer, "--json", "--aggregation", "average", "--stride", "3", "--max-length", "10",
           "--ignore-labels", "O,LOC", b});
  ASSERT_EQ(r.status, 0) << r.err;
  got = json_lines(r.out);
  ASSERT_EQ(got.at(0).size(), want.size());
  ASSERT_FALSE(want.empty());
  for (size_t j = 0; j < want.size(); ++j) {
    const ordered& e = got[0][j];
    EXPECT_EQ(keys(e), (std::vector<std::string>{"entity_group", "score", "word", "start", "end"}));
    EXPECT_EQ(e["entity_group"], want[j].entity);
    EXPECT_NE(e["entity_group"], "LOC");
    EXPECT_NEAR(e["score"].get<double>(), want[j].score, kScoreTol);
    EXPECT_EQ(e["word"], want[j].word);
    EXPECT_EQ(e["start"].get<int64_t>(), want[j].start);
    EXPECT_EQ(e["end"].get<int64_t>(), want[j].end);
  }
}

// A text longer than the window is read whole (default stride: a quarter of the window), with an
// aggregation and without one: entities reach its end and equal the library's with that stride.
// Without an aggregation a token read by two windows is listed once (HF's
// aggregate_overlapping_entities), so no two tokens share a start.
TEST(CliTasks, NerReadsLongTextsWhole) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "Angela Merkel visited New York. ";
  text.pop_back();
  const auto ner = roberta::TokenClassifier::load(kNer);
  for (const char* aggregation : {"simple", "none"}) {
    SCOPED_TRACE(aggregation);
    roberta::TokenClassifyOptions o;
    o.aggregation = roberta::parse_aggregation(aggregation);
    o.ignore_labels.clear();
    o.max_length = 32;
    o.stride = 8;
    const auto want = ner(text, o);
    const Result r = run({"ner", "--model", kNer, "--json", "--aggregation", aggregation, "--ignore-labels", "",
                          "--max-length", "32"},
                         text + "\n");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err, "");
    const auto got = json_lines(r.out).at(0);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(got.back()["end"].get<int64_t>(), static_cast<int64_t>(text.size())) << "the end of the text was read";
    std::set<int64_t> starts;
    for (size_t j = 0; j < want.size(); ++j) {
      EXPECT_EQ(got[j]["start"].get<int64_t>(), want[j].start);
      EXPECT_TRUE(starts.insert(want[j].start).second) << "two entities start at " << want[j].start;
      if (want[j].index >= 0) {
        EXPECT_EQ(got[j]["index"].get<int64_t>(), want[j].index);
        EXPECT_LT(want[j].index, 31) << "an index counts in its window of 32 tokens";
      }
    }
  }
}

TEST(CliTasks, QaEqualsTheLibrary) {
  const auto qa = roberta::QuestionAnswerer::load(kQa);
  const std::vector<std::pair<std::string, std::string>> inputs = {
      {"Where do I live?", "My name is Wolfgang and I live in Berlin, a city with many trains and old houses."},
      {"What is my name?", "My name is Wolfgang."}};
  roberta::QuestionAnswerOptions o;
  o.top_k = 3;
  o.max_answer_len = 4;
  o.max_seq_len = 16;
  o.doc_stride = 3;
  o.handle_impossible_answer = true;
  std::string input;
  for (const auto& [q, c] : inputs) input += ordered{{"question", q}, {"context", c}}.dump() + "\n";
  Result r = run({"qa", "--model", kQa, "--json", "--top-k", "3", "--max-answer-len", "4", "--max-seq-len", "16",
                  "--doc-stride", "3", "--handle-impossible-answer", "--max-question-len", "10"},
                 input);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto got = json_lines(r.out);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_GT(qa.prepare(inputs[i].first, inputs[i].second, o).windows.size(), i == 0 ? 1u : 0u);
    const auto want = qa(inputs[i].first, inputs[i].second, o);
    ASSERT_EQ(want.size(), 3u);
    ASSERT_TRUE(got[i].is_array()) << got[i].dump();
    ASSERT_EQ(got[i].size(), 3u);
    for (size_t j = 0; j < 3; ++j) {
      EXPECT_EQ(keys(got[i][j]), (std::vector<std::string>{"score", "start", "end", "answer"}));
      EXPECT_NEAR(got[i][j]["score"].get<double>(), want[j].score, kScoreTol);
      EXPECT_EQ(got[i][j]["start"].get<int64_t>(), want[j].start);
      EXPECT_EQ(got[i][j]["end"].get<int64_t>(), want[j].end);
      EXPECT_EQ(got[i][j]["answer"], want[j].answer);
    }
  }
  // --question / --context and one answer: an object, as HF.
  r = run({"qa", "--model", kQa, "--json", "--question", inputs[1].first, "--context", inputs[1].second});
  ASSERT_EQ(r.status, 0) << r.err;
  const ordered one = ordered::parse(r.out);
  ASSERT_TRUE(one.is_object()) << r.out;
  const auto want = qa(inputs[1].first, inputs[1].second);
  EXPECT_EQ(one["answer"], want.at(0).answer);
  EXPECT_NEAR(one["score"].get<double>(), want[0].score, kScoreTol);
}

// A bad input between two good ones: two answers and an {"error"} line in its place, the error
// on stderr with its line number, exit 1.
TEST(CliTasks, BadLineBetweenTwoGoodOnesIsAnErrorForThatLineOnly) {
  struct Case {
    std::vector<std::string> args;
    std::string good1, bad, good2, message;
  };
  const std::string qa_good = R"({"question": "Who?", "context": "Wolfgang lives here."})";
  const std::vector<Case> cases = {
      {{"classify", "--model", kSentiment, "--input-format", "jsonl"}, "\"fine\"", R"(["a", "b", "c"])", R"(["a", "b"])",
       "expected a JSON string, a pair [text, text_pair]"},
      {{"classify", "--model", kSentiment}, "fine", "bad \xff byte", "also fine", "invalid UTF-8 at byte 4"},
      {{"zero-shot", "--model", kNli, "--labels", "a,b", "--input-format", "jsonl"}, "\"fine\"",
       R"({"sequence": "x", "candidate_labels": []})", R"({"sequence": "y", "candidate_labels": "c, d"})",
       "the candidate label list is empty"},
      {{"zero-shot", "--model", kNli, "--labels", "a,b"}, "fine", "", "also fine", "the text is empty"},
      {{"rerank", "--model", kReranker, "--pairs"}, R"(["q", "a"])", R"(["q"])", R"(["q", "b"])",
       "expected a pair [a, b] of two JSON strings"},
      {{"ner", "--model", kNer}, "Angela", "caf\xc3 bad", "Merkel", "invalid UTF-8 at byte 3"},
      {{"qa", "--model", kQa}, qa_good, R"({"question": "Who?", "context": ""})", qa_good, "the context is empty"},
      {{"qa", "--model", kQa, "--max-seq-len", "14"}, qa_good,
       R"({"question": "Who is it, who is it, who is it?", "context": "Wolfgang lives here."})", qa_good,
       "the question has 12 tokens: with max_seq_len 14 no room is left for the context"},
  };
  for (const Case& c : cases) {
    auto args = c.args;
    args.push_back("--json");
    const Result r = run(args, c.good1 + "\n" + c.bad + "\n" + c.good2 + "\n");
    const std::string what = c.args[0] + " " + c.bad;
    EXPECT_EQ(r.status, 1) << what << ": " << r.err;
    const auto out = lines_of(r.out);
    ASSERT_EQ(out.size(), 3u) << what << ": " << r.out;
    EXPECT_FALSE(json::parse(out[0]).contains("error")) << what << ": " << out[0];
    EXPECT_TRUE(json::parse(out[1]).contains("error")) << what << ": " << out[1];
    EXPECT_NE(json::parse(out[1]).value("error", "").find(c.message), std::string::npos) << what << ": " << out[1];
    EXPECT_FALSE(json::parse(out[2]).contains("error")) << what << ": " << out[2];
    EXPECT_NE(r.err.find("error: line 2: " + c.message), std::string::npos) << what << ": " << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << what << ": " << r.err;
  }
  // rerank ranks every good document and leaves the bad one out (corpus_id counts input lines).
  const Result r = run({"rerank", "--model", kReranker, "--json", "--query", "q"}, "a\nbad \xff\nb\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error: line 2: invalid UTF-8 at byte 4"), std::string::npos) << r.err;
  std::set<size_t> ids;
  for (const auto& d : json::parse(r.out)) ids.insert(d["corpus_id"].get<size_t>());
  EXPECT_EQ(ids, (std::set<size_t>{0, 2}));
}

TEST(CliTasks, ModelWithoutTheHeadIsAnErrorBeforeAnyInput) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"classify"}, "no sequence classification head"},
      {{"zero-shot", "--labels", "a,b"}, "no sequence classification head"},
      {{"rerank", "--query", "q"}, "no sequence classification head"},
      {{"ner"}, "no token classification head"},
      {{"qa"}, "no question answering head"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> a = args;
    a.insert(a.begin() + 1, {"--model", kTiny, "--json"});
    const Result r = run(a, "some input\n");
    EXPECT_EQ(r.status, 1) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("error: " + kTiny + ": the model has " + message), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << args[0];
    EXPECT_EQ(r.err.find("line 1"), std::string::npos) << r.err;
  }
  // zero-shot without an "entailment" label takes the last one, with a warning (as transformers).
  const Result r = run({"zero-shot", "--model", kSentiment, "--labels", "a,b", "--json"}, "x\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("warning: " + kSentiment + ": the model's label2id has no label starting with \"entail\""),
            std::string::npos) << r.err;
  EXPECT_NE(r.out.find("\"labels\":["), std::string::npos) << r.out;
}

TEST(CliTasks, UsageErrorsExitWithTwo) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"classify", "--model", kSentiment, "--top-k", "2", "--all", "x"},
           {"classify", "--model", kSentiment, "--function", "relu", "x"},
           {"classify", "--model", kSentiment, "--input-format", "csv", "x"},
           {"zero-shot", "--model", kNli, "x"},
           {"zero-shot", "--model", kNli, "--labels", " , ", "x"},
           {"zero-shot", "--model", kNli, "--labels", "a", "--template", "no field", "x"},
           {"zero-shot", "--model", kNli, "--labels", "a", "--template", "{name}", "x"},
           {"rerank", "--model", kReranker, "x"},
           {"rerank", "--model", kReranker, "--pairs", "--query", "q"},
           {"ner", "--model", kNer, "--max-length", "8", "--stride", "6", "x"},  // (6 text tokens a window)
           {"ner", "--model", kNer, "--aggregation", "median", "x"},
           {"qa", "--model", kQa, "--question", "q"},
           {"qa", "--model", kQa, "--top-k", "0"},
           {"qa", "--model", kQa, "positional"},
           // options whose values the library refuses: checked before any input is read, so the
           // error is one usage error, not one for every input line
           {"qa", "--model", kQa, "--doc-stride", "500"},
           {"qa", "--model", kQa, "--max-seq-len", "5", "--doc-stride", "1"},  // (1 token for question and context)
           {"ner", "--model", kNer, "--aggregation", "simple", "--stride", "600"},
           {"embed", "--model", kTiny, "--prompt-name", "nope"},
           {"zero-shot", "--model", kNli, "--labels", "a\xff"},
           {"fill-mask", "--model", kTiny, "--targets", "\xff"},
           {"rerank", "--model", kReranker, "--query", "q", "--max-length", "3"}}) {
    const Result r = run(args, "{\"question\": \"q\", \"context\": \"c\"}\nsecond line\n");
    EXPECT_EQ(r.status, 2) << args[0] << " " << args.back() << ": " << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find("line "), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << args[0] << " " << args.back();
  }
  const Result r = run({"rerank", "--model", kReranker, "--query", "q", "--max-length", "3"});
  EXPECT_NE(r.err.find("--max-length"), std::string::npos) << r.err;
  // A --max-seq-len above the model's is no error for an example that fits it (HF reads it whole).
  const Result qa =
      run({"qa", "--model", kQa, "--max-seq-len", "100000", "--json", "--question", "q", "--context", "c"});
  EXPECT_EQ(qa.status, 0) << qa.err;
  EXPECT_NE(qa.out.find("\"answer\""), std::string::npos) << qa.out;
  EXPECT_NE(run({"zero-shot", "--model", kNli, "--labels", "a\xff"}).err.find("--labels: invalid UTF-8 at byte 1"),
            std::string::npos);
}

// NER with an aggregation reads a long text whole, in windows, however short --max-length is.
TEST(CliTasks, NerReadsLongTextsWholeInSmallWindows) {
  const Result whole = run({"ner", "--model", kNer, "--json", "--aggregation", "simple", "--ignore-labels", "",
                            "--max-length", "5", "a b c d e f g h"});
  ASSERT_EQ(whole.status, 0) << whole.err;
  EXPECT_EQ(whole.err.find("only the first"), std::string::npos) << whole.err;
  const auto entities = ordered::parse(whole.out);
  ASSERT_FALSE(entities.empty());
  EXPECT_EQ(entities.back()["end"], 15) << whole.out;  // the last word, "h", is read
}

}  // namespace
