// One loaded model shared by 8 threads, fill-mask and embed mixed (one text, and all texts as one
// padded batch): every answer must be identical to running the same input alone. In each weight
// type, on the demo model too (head size 64: attention on the kernels of the CPU, AMX tiles where
// it has them, whose tile configuration is per thread). Run it under ThreadSanitizer too
// (tools/sanitize.sh).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <tuple>

#include "kernels/isa.h"
#include "roberta/pipelines.h"

namespace {

std::vector<std::string> inputs() {
  std::ifstream in(ROBERTA_CLI_TEXTS);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

using Case = std::tuple<std::string, roberta::WeightType>;  // model folder, weight type

class Concurrency : public ::testing::TestWithParam<Case> {};

TEST_P(Concurrency, EightThreadsGiveTheSameAnswersAsOneByOne) {
  const auto& [dir, weights] = GetParam();
  std::printf("  kernels up to: %s\n", roberta::kernels::isa_name(roberta::kernels::usable_isa()));
  const roberta::Model model = roberta::Model::load(dir, {.weights = weights});
  const roberta::Tokenizer tok = roberta::Tokenizer::from_dir(dir);
  const roberta::FillMask fill(model, tok);
  const roberta::Embedder embed(model, tok);
  const auto texts = inputs();
  ASSERT_GE(texts.size(), 2u);

  std::vector<std::vector<std::vector<roberta::FillMaskCandidate>>> want_fill;
  std::vector<std::vector<float>> want_embed;
  for (const auto& t : texts) {
    want_fill.push_back(fill(t));
    want_embed.push_back(embed(std::vector<std::string>{t}).data);
  }
  const std::vector<float> want_batch = embed(texts).data;

  constexpr int kThreads = 8, kRounds = 6;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          const size_t k = (i + static_cast<size_t>(t * 3 + round)) % texts.size();
          const size_t op = (static_cast<size_t>(t + round) + i) % 3;
          if (op == 0) {
            const auto got = fill(texts[k]);
            if (got.size() != want_fill[k].size()) {
              ++mismatches[t];
              continue;
            }
            for (size_t m = 0; m < got.size(); ++m) {
              if (got[m].size() != want_fill[k][m].size()) {
                ++mismatches[t];
                continue;
              }
              for (size_t c = 0; c < got[m].size(); ++c)
                if (got[m][c].token != want_fill[k][m][c].token || got[m][c].score != want_fill[k][m][c].score)
                  ++mismatches[t];
            }
          } else if (op == 1) {
            if (embed(std::vector<std::string>{texts[k]}).data != want_embed[k]) ++mismatches[t];
          } else if (embed(texts).data != want_batch) {
            ++mismatches[t];
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto& [dir, weights] = info.param;
  const char* type = weights == roberta::WeightType::kF32    ? "F32"
                     : weights == roberta::WeightType::kBF16 ? "BF16"
                                                             : "Int8";
  return std::string(dir == ROBERTA_DEMO_MODEL ? "Demo" : "Tiny") + type;
}

const std::string kTiny = std::string(ROBERTA_CLI_FIXTURES) + "/tiny";

INSTANTIATE_TEST_SUITE_P(Models, Concurrency,
                         ::testing::Combine(::testing::Values(kTiny, std::string(ROBERTA_DEMO_MODEL)),
                                            ::testing::Values(roberta::WeightType::kF32, roberta::WeightType::kBF16,
                                                              roberta::WeightType::kInt8)),
                         case_name);

}  // namespace
