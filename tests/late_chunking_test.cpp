// Late chunking: sentence splitting, chunk membership, windows and their stitching, batch
// composition and errors, each checked against a computation written out here from the rules in
// docs/late-chunking.md. (Against PyTorch and HF's tokenizer: tests/parity/run_late_chunking_parity.sh.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "random_model.h"
#include "roberta/error.h"
#include "roberta/late_chunking.h"
#include "test_util.h"

namespace {

using roberta::ChunkedText;
using roberta::LateChunkingOptions;
using roberta::TextSpan;

const roberta::Embedder& embedder() {
  static roberta::test::TempDir dir;
  static const roberta::Embedder e = [] {
    roberta::test::write_random_model(dir.path(), "mlm", {}, roberta::test::RandomShape{.hidden = 16, .layers = 2});
    return roberta::Embedder::load(dir.path());
  }();
  return e;
}

const std::string kLong =
    "The river rose in the night. By morning the lower town was under water, and the mill stood "
    "alone in a brown lake. Nobody had seen it coming! The old men said it had happened once before, "
    "long ago, when the bridge was still made of wood. Was it the rain in the hills? Or the dam? "
    "Nobody knew, and the town council met at noon.";

// The last hidden states of one sequence.
roberta::Matrix states(const std::vector<int32_t>& ids) {
  roberta::PreparedText p;
  p.ids = ids;
  return embedder().run_tokens(std::span<const roberta::PreparedText>(&p, 1)).front();
}

TEST(LateChunking, SentencesFollowTheRule) {
  using V = std::vector<TextSpan>;
  EXPECT_EQ(roberta::split_sentences("Hi there. How are you?  Fine!"), (V{{0, 9}, {10, 22}, {24, 29}}));
  EXPECT_EQ(roberta::split_sentences("He said \"Stop.\" Then left."), (V{{0, 15}, {16, 26}}));
  EXPECT_EQ(roberta::split_sentences("Mr. Smith paid 3.14 dollars"), (V{{0, 3}, {4, 27}}));
  EXPECT_EQ(roberta::split_sentences("one line\nthe same sentence\n \t\nnew one"), (V{{0, 26}, {30, 37}}));
  EXPECT_EQ(roberta::split_sentences("Wait\u2026 what?!\u201d Yes"), (V{{0, 5}, {6, 13}, {14, 17}}));
  EXPECT_EQ(roberta::split_sentences("\u00dcber. \u00c7a"), (V{{0, 5}, {6, 8}}));  // code points, not bytes
  EXPECT_EQ(roberta::split_sentences("  \n\n "), V{});
  EXPECT_THROW(roberta::split_sentences("bad \xff byte"), roberta::Error);
}

// One window: each chunk is the mean of the states of the tokens whose offsets overlap its span.
TEST(LateChunking, OneWindowChunksAreMeansOverTheirTokens) {
  const std::string text = "Berlin is a city. It has many bridges.  And rivers.";
  const roberta::Encoding e = embedder().tokenizer().encode(text);
  const roberta::Matrix all = states(e.ids);
  const std::vector<TextSpan> spans{{0, 17}, {18, 38}, {3, 14}, {8, 9}, {40, 51}, {0, 51}};
  LateChunkingOptions o;
  o.text.normalize = false;
  const ChunkedText got = roberta::late_chunks(embedder(), std::vector<std::string>{text}, o,
                                               std::vector<std::optional<std::vector<TextSpan>>>{spans})[0];
  ASSERT_EQ(got.windows, 1u);
  EXPECT_EQ(got.tokens, e.size() - 2);
  ASSERT_EQ(got.embeddings.rows, spans.size());
  for (size_t c = 0; c < spans.size(); ++c) {
    std::vector<double> sum(all.cols);
    size_t n = 0;
    for (size_t t = 1; t + 1 < e.size(); ++t) {
      const auto [a, b] = e.offsets[t];
      if (a < b && a < static_cast<int64_t>(spans[c].end) && b > static_cast<int64_t>(spans[c].start)) {
        ++n;
        for (size_t h = 0; h < all.cols; ++h) sum[h] += all.row(t)[h];
      }
    }
    ASSERT_GT(n, 0u);
    for (size_t h = 0; h < all.cols; ++h) EXPECT_NEAR(got.embeddings.row(c)[h], sum[h] / n, 1e-6) << c << " " << h;
  }
}

// Several windows: a chunk of one token is that token's state in the window where it has the most
// tokens on its shorter side (the earlier window on a tie).
TEST(LateChunking, EachTokenComesFromItsMostCentralWindow) {
  const roberta::Encoding e = embedder().tokenizer().encode(kLong);
  const size_t T = e.size() - 2, width = 20, overlap = 7;
  ASSERT_GT(T, 3 * width);
  std::vector<TextSpan> spans;
  std::vector<size_t> token;
  for (size_t t = 0; t < T; ++t)
    if (e.offsets[t + 1].first < e.offsets[t + 1].second)
      spans.push_back({static_cast<size_t>(e.offsets[t + 1].first), static_cast<size_t>(e.offsets[t + 1].second)}),
          token.push_back(t);
  LateChunkingOptions o;
  o.text.normalize = false;
  o.text.max_length = width + 2;
  o.overlap = overlap;
  const ChunkedText got = roberta::late_chunks(embedder(), std::vector<std::string>{kLong}, o,
                                               std::vector<std::optional<std::vector<TextSpan>>>{spans})[0];
  std::vector<size_t> starts;
  for (size_t s = 0;; s += width - overlap) {
    starts.push_back(s);
    if (s + width >= T) break;
  }
  EXPECT_EQ(got.windows, starts.size());
  std::vector<roberta::Matrix> window_states;
  for (size_t s : starts) {
    std::vector<int32_t> ids{e.ids.front()};
    ids.insert(ids.end(), e.ids.begin() + 1 + s, e.ids.begin() + 1 + std::min(s + width, T));
    ids.push_back(e.ids.back());
    window_states.push_back(states(ids));
  }
  size_t from_later = 0;
  for (size_t c = 0; c < token.size(); ++c) {
    const size_t t = token[c];
    size_t best = 0;
    long best_context = -1;
    for (size_t k = 0; k < starts.size(); ++k) {
      const size_t s = starts[k], end = std::min(s + width, T);
      if (t < s || t >= end) continue;
      const long context = static_cast<long>(std::min(t - s, end - 1 - t));
      if (context > best_context) best = k, best_context = context;
    }
    from_later += best > 0 && t < starts[best] + overlap;  // in an overlap, taken from the later window
    const float* want = window_states[best].row(1 + t - starts[best]);
    for (size_t h = 0; h < got.embeddings.cols; ++h) ASSERT_EQ(got.embeddings.row(c)[h], want[h]) << "token " << t;
  }
  EXPECT_GT(from_later, 0u);
}

TEST(LateChunking, ChunksDoNotDependOnTheOtherDocumentsOrTheBatch) {
  const std::vector<std::string> docs{kLong, "Short. Text.", kLong.substr(100), ""};
  LateChunkingOptions o;
  o.text.max_length = 24;
  o.text.batch_size = 3;
  const auto together = roberta::late_chunks(embedder(), docs, o);
  o.text.batch_size = 1;
  for (size_t i = 0; i < docs.size(); ++i) {
    const auto alone = roberta::late_chunks(embedder(), std::vector<std::string>{docs[i]}, o)[0];
    EXPECT_EQ(alone.spans, together[i].spans);
    EXPECT_EQ(alone.embeddings.data, together[i].embeddings.data) << i;
  }
  EXPECT_EQ(together[3].spans.size(), 0u);  // the empty document: no chunk, no window
  EXPECT_EQ(together[3].windows, 0u);
}

TEST(LateChunking, TokenChunksAndPackedSentences) {
  const roberta::Encoding e = embedder().tokenizer().encode(kLong);
  LateChunkingOptions o;
  o.chunk_by = roberta::ChunkBy::kTokens;
  o.chunk_tokens = 9;
  const ChunkedText by_tokens = roberta::late_chunks(embedder(), std::vector<std::string>{kLong}, o)[0];
  ASSERT_EQ(by_tokens.spans.size(), (e.size() - 2 + 8) / 9);
  for (size_t g = 0; g < by_tokens.spans.size(); ++g)  // (this text has no empty-span token)
    EXPECT_EQ(by_tokens.spans[g],
              (TextSpan{static_cast<size_t>(e.offsets[1 + 9 * g].first),
                        static_cast<size_t>(e.offsets[std::min(9 * g + 9, e.size() - 2)].second)}));
  o.chunk_by = roberta::ChunkBy::kSentences;
  o.chunk_tokens = 30;
  const ChunkedText packed = roberta::late_chunks(embedder(), std::vector<std::string>{kLong}, o)[0];
  const std::vector<TextSpan> sentences = roberta::split_sentences(kLong);
  ASSERT_LT(packed.spans.size(), sentences.size());
  EXPECT_EQ(packed.spans.front().start, sentences.front().start);
  EXPECT_EQ(packed.spans.back().end, sentences.back().end);
  for (const TextSpan& s : packed.spans) {  // each chunk: whole sentences, at most 30 tokens unless one alone
    size_t n = 0;
    for (size_t t = 1; t + 1 < e.size(); ++t)
      n += e.offsets[t].first < static_cast<int64_t>(s.end) && e.offsets[t].second > static_cast<int64_t>(s.start);
    const bool one = std::count_if(sentences.begin(), sentences.end(),
                                   [&](const TextSpan& x) { return x.start >= s.start && x.end <= s.end; }) == 1;
    EXPECT_TRUE(n <= 30 || one) << s.start;
  }
}

TEST(LateChunking, ThePromptStartsEveryWindowAndIsNoChunksToken) {
  LateChunkingOptions o;
  o.text.prompt = "query: ";
  o.text.max_length = 24;
  o.text.normalize = false;
  const roberta::LateChunks d = roberta::prepare_late_chunks(embedder(), kLong, o);
  const std::vector<int32_t> prompt = embedder().tokenizer().encode("query: ").ids;  // <s> query : </s>
  ASSERT_GT(d.windows().size(), 2u);
  for (const roberta::PreparedText& w : d.windows()) {
    ASSERT_EQ(w.ids.size() <= 24, true);
    EXPECT_TRUE(std::equal(prompt.begin(), prompt.end() - 1, w.ids.begin()));
  }
  o.text.prompt = "";
  for (int i = 0; i < 30; ++i) *o.text.prompt += " word";
  EXPECT_THROW(roberta::prepare_late_chunks(embedder(), kLong, o), roberta::Error);
}

TEST(LateChunking, BadSpansAndOptionsAreErrors) {
  const auto fails = [](const std::string& text, const LateChunkingOptions& o, std::vector<TextSpan> spans,
                        const std::string& says) {
    try {
      roberta::prepare_late_chunks(embedder(), text, o, spans.empty() ? nullptr : &spans);
      ADD_FAILURE() << "no error for " << says;
    } catch (const roberta::Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  const LateChunkingOptions plain;
  fails("abc def", plain, {{0, 3}, {4, 8}}, "spans[1] [4, 8) is not a non-empty range of the document's 7 characters");
  fails("abc def", plain, {{2, 2}}, "spans[0] [2, 2)");
  fails("abc   def", plain, {{4, 5}}, "spans[0] [4, 5) holds no token");
  LateChunkingOptions o;
  o.text.max_length = 10;
  o.overlap = 8;
  fails("abc def", o, {}, "an overlap of 8 tokens is not less than the 8 document tokens a window holds");
  o = {};
  o.text.pooling = roberta::Pooling::kCls;
  fails("abc def", o, {}, "pools each chunk by mean");
  o = {};
  o.chunk_by = roberta::ChunkBy::kTokens;
  fails("abc def", o, {}, "needs a number of tokens per chunk");
  try {
    roberta::late_chunks(embedder(), std::vector<std::string>{"fine", "bad \xff"});
    ADD_FAILURE() << "invalid UTF-8 accepted";
  } catch (const roberta::Error& e) {
    EXPECT_EQ(e.input(), 1u);
  }
}

}  // namespace
