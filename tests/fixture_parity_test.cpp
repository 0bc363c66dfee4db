// Fast parity check without Python: a small committed checkpoint (tied decoder) and PyTorch's
// outputs for a left-padded batch (tests/data/fixtures/small, made with tools/make_test_model.py
// --preset small-vocab --seed 31 --tied and tools/dump_reference.py --padding left).
#include <gtest/gtest.h>

#include <cmath>

#include "roberta/model.h"
#include "roberta/dev/npy.h"

namespace {

const std::string kDir = std::string(ROBERTA_TEST_DATA) + "/fixtures/small/";

TEST(FixtureParity, EveryLayerLogitsAndPoolerWithin1e4OfPyTorch) {
  const roberta::Model model = roberta::Model::load(kDir + "model");
  const auto ids_npy = roberta::read_npy(kDir + "dump-left/input_ids.npy");
  const auto ids = ids_npy.as_int64();
  const auto mask = roberta::read_npy(kDir + "dump-left/attention_mask.npy").as_int64();
  const size_t B = static_cast<size_t>(ids_npy.shape[0]), L = static_cast<size_t>(ids_npy.shape[1]);
  roberta::Batch batch;
  std::vector<size_t> where;  // b * L + l of each packed token
  for (size_t b = 0; b < B; ++b) {
    std::vector<int32_t> seq;
    for (size_t l = 0; l < L; ++l)
      if (mask[b * L + l]) seq.push_back(static_cast<int32_t>(ids[b * L + l])), where.push_back(b * L + l);
    batch.add_sequence(seq);
  }
  const roberta::Outputs out = model.forward(batch, {.all_hidden_states = true, .logits = true, .pooler = true});
  const auto check = [&](const roberta::Matrix& mine, const std::string& name) {
    const auto ref = roberta::read_npy(kDir + "dump-left/" + name + ".npy").as_float();
    double max_diff = 0;
    for (size_t t = 0; t < mine.rows; ++t)
      for (size_t c = 0; c < mine.cols; ++c)
        max_diff = std::max<double>(max_diff, std::abs(mine.row(t)[c] - ref[where[t] * mine.cols + c]));
    EXPECT_LE(max_diff, 1e-4) << name;
    EXPECT_GT(mine.rows, 0u);
  };
  ASSERT_EQ(out.hidden_states.size(), 3u);
  for (size_t i = 0; i < out.hidden_states.size(); ++i) check(out.hidden_states[i], "hidden_states_" + std::to_string(i));
  check(out.logits, "logits");
  const auto pooler = roberta::read_npy(kDir + "dump-left/pooler_output.npy").as_float();
  const size_t H = out.pooler_output.cols;
  for (size_t b = 0; b < B; ++b) {
    if (!mask[b * L]) continue;  // HF pools position 0, which is padding in a left-padded row
    for (size_t h = 0; h < H; ++h) EXPECT_NEAR(out.pooler_output.row(b)[h], pooler[b * H + h], 1e-4);
  }
}

}  // namespace
