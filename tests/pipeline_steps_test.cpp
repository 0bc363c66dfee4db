// The prepare / run / finish steps of FillMask, TextClassifier and CrossEncoder as a server uses
// them: inputs of several callers packed into one Batch, run once, each caller finishing its own
// rows, give exactly what each caller would get alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "random_model.h"
#include "roberta/pipelines.h"
#include "test_util.h"

namespace {

using namespace roberta;

// Rows [first, first + count) of m.
Matrix rows_of(const Matrix& m, size_t first, size_t count) {
  Matrix out(count, m.cols);
  std::copy_n(m.row(first), count * m.cols, out.data.begin());
  return out;
}

void expect_same_candidates(const std::vector<std::vector<FillMaskCandidate>>& a,
                            const std::vector<std::vector<FillMaskCandidate>>& b, const std::string& where) {
  ASSERT_EQ(a.size(), b.size()) << where;
  for (size_t m = 0; m < a.size(); ++m) {
    ASSERT_EQ(a[m].size(), b[m].size()) << where;
    for (size_t i = 0; i < a[m].size(); ++i) {
      EXPECT_EQ(a[m][i].token, b[m][i].token) << where;
      EXPECT_NEAR(a[m][i].score, b[m][i].score, 1e-6) << where;
      EXPECT_EQ(a[m][i].token_str, b[m][i].token_str) << where;
      EXPECT_EQ(a[m][i].sequence, b[m][i].sequence) << where;
    }
  }
}

TEST(FillMaskSteps, TextsOfSeveralCallersInOnePassEqualEachAlone) {
  const FillMask fill = FillMask::load(ROBERTA_DEMO_MODEL);
  const std::vector<std::string> texts{"She opened the <mask> and looked out.", "The <mask> sat on the <mask>.",
                                       "A long day in the <mask> of the city, with the river and the bridges."};
  std::vector<FillMask::Prepared> prepared;
  for (const auto& t : texts) prepared.push_back(fill.prepare(t));
  EXPECT_EQ(prepared[1].mask_positions.size(), 2u);
  FillMaskOptions o;
  o.top_k = 4;

  // run(span): every mask of every text, text after text.
  const Matrix all = fill.run(prepared);
  ASSERT_EQ(all.rows, 4u);
  // run(Batch) packed by the caller in another order: the same rows, bit for bit.
  Batch batch;
  for (size_t i : {2, 0, 1}) batch.add_sequence(prepared[i].encoding.ids);
  const Matrix reordered = fill.run(batch);
  ASSERT_EQ(reordered.rows, 4u);
  EXPECT_EQ(std::vector<float>(reordered.row(0), reordered.row(1)), std::vector<float>(all.row(3), all.row(4)));

  size_t row = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const size_t n = prepared[i].mask_positions.size();
    const Matrix mine = rows_of(all, row, n);
    row += n;
    const Matrix alone = fill.run(std::span(&prepared[i], 1));
    EXPECT_EQ(mine.data, alone.data) << texts[i];  // a row does not depend on the rest of the pass
    expect_same_candidates(fill.finish(prepared[i], mine, o), fill(texts[i], o), texts[i]);
  }
  o.targets = {"door", "window"};
  expect_same_candidates(fill.finish(prepared[0], rows_of(all, 0, 1), o), fill(texts[0], o), "targets");
}

TEST(FillMaskSteps, Errors) {
  const FillMask fill = FillMask::load(ROBERTA_DEMO_MODEL);
  test::expect_error([&] { fill.prepare("no mask here"); }, {"no <mask> in the text"});
  std::string long_text;
  for (int i = 0; i < 600; ++i) long_text += " word";
  test::expect_error([&] { fill.prepare(long_text + " <mask>"); }, {"tokens; the model allows at most"});
  const FillMask::Prepared p = fill.prepare("The <mask> sat on the <mask>.");
  test::expect_error([&] { fill.finish(p, Matrix(1, 3), {}); }, {"FillMask::finish", "1x3", "expected 2x"});
  FillMaskOptions o;
  o.targets = {""};
  const Matrix logits = fill.run(std::span(&p, 1));
  test::expect_error([&] { fill.finish(p, logits, o); }, {"none of the targets"});
  Batch no_masks;
  no_masks.add_sequence(fill.tokenizer().encode("no mask").ids);
  EXPECT_EQ(fill.run(no_masks).rows, 0u);  // not every token's logits
  EXPECT_EQ(fill.run(Batch{}).rows, 0u);
}

TEST(ClassifierSteps, InputsOfSeveralCallersInOneBatchEqualEachAlone) {
  test::TempDir dir;
  test::write_random_model(dir.path(), "sequence", {"NEGATIVE", "NEUTRAL", "POSITIVE"});
  const TextClassifier tc = TextClassifier::load(dir.path());
  const std::vector<TextInput> a{{"A first text.", std::nullopt}, {"A man plays.", "Someone makes music."}};
  const std::vector<TextInput> b{{"Another caller's only text, somewhat longer than the others.", std::nullopt}};
  TextClassifyOptions all;
  all.top_k = std::nullopt;
  const auto pa = tc.prepare(a, all), pb = tc.prepare(b, all);
  Batch batch;
  for (const auto& e : pb.encodings) batch.add_sequence(e.ids);  // b first: order is the caller's
  for (const auto& e : pa.encodings) batch.add_sequence(e.ids);
  const Matrix logits = tc.run(batch);
  ASSERT_EQ(logits.rows, 3u);
  ASSERT_EQ(logits.cols, 3u);
  const Matrix la = rows_of(logits, 1, 2), lb = rows_of(logits, 0, 1);
  EXPECT_EQ(la.data, tc.run(pa).data);
  EXPECT_EQ(lb.data, tc.run(pb).data);
  const auto ra = tc.finish(pa, la, all), direct = tc(a, all);
  ASSERT_EQ(ra.size(), direct.size());
  for (size_t i = 0; i < ra.size(); ++i)
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(ra[i][k].label, direct[i][k].label);
      EXPECT_EQ(ra[i][k].score, direct[i][k].score);
    }
  EXPECT_EQ(tc.run(Batch{}).rows, 0u);

  // More tokens than one pass holds (16,384): several passes, each row as the text's own pass.
  std::vector<TextInput> many;
  for (int i = 0; i < 1000; ++i)
    many.push_back({"Text number " + std::to_string(i) + " of many, long enough to need more than one pass when all "
                    "of them come together in a single call of the classifier, which splits them.", std::nullopt});
  const auto pm = tc.prepare(many, all);
  size_t tokens = 0;
  for (const auto& e : pm.encodings) tokens += e.size();
  ASSERT_GT(tokens, 16384u * 2);
  const Matrix lm = tc.run(pm);
  ASSERT_EQ(lm.rows, many.size());
  for (size_t i : {size_t{0}, size_t{470}, size_t{999}}) {
    const auto one = tc.prepare(std::span(many).subspan(i, 1), all);
    EXPECT_EQ(rows_of(lm, i, 1).data, tc.run(one).data) << i;
  }

  // A classifier made without weights cannot run a batch either.
  const TextClassifier no_model(tc.tokenizer(), tc.config());
  test::expect_error([&] { no_model.run(batch); }, {"no model to run"});
}

TEST(CrossEncoderSteps, RankInStepsWithOtherPairsInTheBatchEqualsRank) {
  test::TempDir dir;
  test::write_random_model(dir.path(), "sequence", {"LABEL_0"});
  const CrossEncoder ce = CrossEncoder::load(dir.path());
  const std::string query = "How many people live in Berlin?";
  const std::vector<std::string> docs{"Berlin has 3.5 million people.", "Paris.", "Berlin is big.", "Cats."};
  RankOptions ro;
  ro.top_k = 3;
  ro.return_documents = true;
  const auto pr = ce.prepare_rank(query, docs, ro);
  ASSERT_EQ(pr.encodings.size(), docs.size());
  const std::vector<TextPair> other{{"q", "an unrelated pair of another caller"}};
  const auto po = ce.prepare(other);
  Batch batch;
  for (const auto& e : po.encodings) batch.add_sequence(e.ids);
  for (const auto& e : pr.encodings) batch.add_sequence(e.ids);
  const Matrix logits = ce.run(batch);
  ASSERT_EQ(logits.rows, 5u);
  const auto ranked = ce.finish_rank(pr, rows_of(logits, 1, 4), docs, ro);
  const auto direct = ce.rank(query, docs, ro);
  ASSERT_EQ(ranked.size(), 3u);
  ASSERT_EQ(direct.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ranked[i].corpus_id, direct[i].corpus_id);
    EXPECT_EQ(ranked[i].score, direct[i].score);
    EXPECT_EQ(*ranked[i].text, docs[ranked[i].corpus_id]);
  }
  EXPECT_EQ(ce.finish(po, rows_of(logits, 0, 1)).data, ce.predict(other).data);
}

TEST(CrossEncoderSteps, RankStepsNeedOneLabel) {
  test::TempDir dir;
  test::write_random_model(dir.path(), "sequence", {"A", "B", "C"});
  const CrossEncoder ce = CrossEncoder::load(dir.path());
  const std::vector<std::string> docs{"a"};
  test::expect_error([&] { ce.prepare_rank("q", docs); }, {"one label", "has 3"});
  const std::vector<TextPair> pairs{{"q", "a"}};
  const auto p = ce.prepare(pairs);
  test::expect_error([&] { ce.finish_rank(p, ce.run(p), docs); }, {"one label"});
}

// The windows of a long text go through the model in passes of at most 16,384 tokens (memory stays
// bounded); each window's rows are those of the window alone.
TEST(WindowSteps, LongTextsRunInPassesEqualToEachWindowAlone) {
  std::string text;
  for (int i = 0; i < 12000; ++i) text += "word" + std::to_string(i % 50) + " ";
  test::TempDir ner_dir, qa_dir;
  test::write_random_model(ner_dir.path(), "token", {"O", "B-PER", "I-PER"});
  test::write_random_model(qa_dir.path(), "qa", {"LABEL_0", "LABEL_1"});
  const TokenClassifier ner = TokenClassifier::load(ner_dir.path());
  TokenClassifyOptions no;
  no.aggregation = Aggregation::kSimple;
  no.stride = 16;
  const auto pn = ner.prepare(text, no);
  size_t tokens = 0;
  for (const auto& w : pn.windows) tokens += w.size();
  ASSERT_GT(tokens, 16384u * 2);
  const Matrix all = ner.run(pn);
  ASSERT_EQ(all.rows, tokens);
  // The first, middle and last windows alone (a window's rows start after the earlier windows' tokens).
  size_t row = 0;
  for (size_t k = 0; k < pn.windows.size(); row += pn.windows[k++].size()) {
    if (k != 0 && k != pn.windows.size() / 2 && k + 1 != pn.windows.size()) continue;
    TokenClassifier::Prepared one;
    one.windows = {pn.windows[k]};
    const Matrix alone = ner.run(one);
    EXPECT_EQ(rows_of(all, row, alone.rows).data, alone.data) << "window " << k;
  }
  const QuestionAnswerer qa = QuestionAnswerer::load(qa_dir.path());
  const auto pq = qa.prepare("Which word?", text, {});
  ASSERT_GT(pq.windows.size(), 300u);
  const SpanLogits span = qa.run(pq);
  size_t at = 0;
  for (size_t k = 0; k < pq.windows.size(); at += pq.windows[k++].size()) {
    if (k != 0 && k != pq.windows.size() / 2 && k + 1 != pq.windows.size()) continue;
    QuestionAnswerer::Prepared one;
    one.windows = {pq.windows[k]};
    const SpanLogits alone = qa.run(one);
    ASSERT_EQ(alone.start.size(), pq.windows[k].size());
    EXPECT_TRUE(std::equal(alone.start.begin(), alone.start.end(), span.start.begin() + static_cast<ptrdiff_t>(at)))
        << "window " << k;
    EXPECT_TRUE(std::equal(alone.end.begin(), alone.end.end(), span.end.begin() + static_cast<ptrdiff_t>(at)));
  }
  EXPECT_EQ(at, span.start.size());
}

}  // namespace
