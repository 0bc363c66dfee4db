// One loaded model shared by 8 threads, fill-mask and embed mixed: every answer must be identical
// to running the same input alone. Run it under ThreadSanitizer too (tools/sanitize.sh).
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "roberta/pipelines.h"

namespace {

const std::string kModel = std::string(ROBERTA_CLI_FIXTURES) + "/tiny";

std::vector<std::string> inputs() {
  std::ifstream in(ROBERTA_CLI_TEXTS);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(Concurrency, EightThreadsGiveTheSameAnswersAsOneByOne) {
  const roberta::Model model = roberta::Model::load(kModel);
  const roberta::Tokenizer tok = roberta::Tokenizer::from_dir(kModel);
  const roberta::FillMask fill(model, tok);
  const roberta::Embedder embed(model, tok);
  const auto texts = inputs();

  std::vector<std::vector<std::vector<roberta::FillMaskCandidate>>> want_fill;
  std::vector<std::vector<float>> want_embed;
  for (const auto& t : texts) {
    want_fill.push_back(fill(t));
    want_embed.push_back(embed(std::vector<std::string>{t}).data);
  }

  constexpr int kThreads = 8, kRounds = 6;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          const size_t k = (i + static_cast<size_t>(t * 3 + round)) % texts.size();
          if ((t + round + i) % 2 == 0) {
            const auto got = fill(texts[k]);
            for (size_t m = 0; m < got.size(); ++m)
              for (size_t c = 0; c < got[m].size(); ++c)
                if (got[m][c].token != want_fill[k][m][c].token || got[m][c].score != want_fill[k][m][c].score)
                  ++mismatches[t];
          } else if (embed(std::vector<std::string>{texts[k]}).data != want_embed[k]) {
            ++mismatches[t];
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

}  // namespace
