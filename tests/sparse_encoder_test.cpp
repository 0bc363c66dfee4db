// SparseEncoder: the logits handed over in chunks, the folder's SpladePooling config and its
// errors, keep_largest and sparse_dot. (Weights against PyTorch: tests/parity/run_sparse_parity.sh.)
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "random_model.h"
#include "roberta/error.h"
#include "roberta/sparse_encoder.h"
#include "test_util.h"

namespace {

using roberta::SparseVector;

// A random MLM model (random_model.h) in a new folder dir/name.
std::filesystem::path mlm_model(const roberta::test::TempDir& dir, const std::string& name,
                                const std::string& head = "mlm") {
  const auto out = dir / name;
  std::filesystem::create_directories(out);
  roberta::test::write_random_model(out, head, head == "mlm" ? std::vector<std::string>{} : std::vector<std::string>{"a", "b"});
  return out;
}

// Sequences of 60 tokens and one of 7, 600 rows in all: chunks of rows straddle sequences.
roberta::Batch long_batch() {
  roberta::Batch batch;
  for (int s = 0; s < 10; ++s) {
    std::vector<int32_t> ids{0};
    for (int t = 1; t + 1 < (s == 4 ? 7 : 60); ++t) ids.push_back(100 + 37 * s + 11 * t);
    ids.push_back(2);
    batch.add_sequence(ids);
  }
  return batch;
}

TEST(SparseEncoder, LogitsInChunksAreTheWholeLogitsRowByRow) {
  roberta::test::TempDir dir;
  const roberta::Model model = roberta::Model::load(mlm_model(dir, "m"));
  const roberta::Batch batch = long_batch();
  roberta::ForwardOptions whole;
  whole.logits = true;
  const roberta::Matrix want = model.forward(batch, whole).logits;
  roberta::ForwardOptions chunked = whole;
  std::vector<float> got;
  std::vector<size_t> firsts;
  chunked.logits_in_chunks = [&](size_t first, const roberta::Matrix& chunk) {
    EXPECT_EQ(first, got.size() / want.cols);
    EXPECT_EQ(chunk.cols, want.cols);
    firsts.push_back(first);
    got.insert(got.end(), chunk.data.begin(), chunk.data.end());
  };
  const roberta::Outputs out = model.forward(batch, chunked);
  EXPECT_EQ(out.logits.rows, 0u);  // nothing kept
  EXPECT_GT(firsts.size(), 1u);
  ASSERT_EQ(got.size(), want.data.size());
  EXPECT_EQ(got, want.data);
}

TEST(SparseEncoder, MaxOverTokensOfTheWholeLogits) {
  // The pooled weights are log1p(relu(max over a text's rows)) of the logits a whole forward pass
  // gives, for every text of a batch longer than a chunk.
  roberta::test::TempDir dir;
  const roberta::SparseEncoder enc = roberta::SparseEncoder::load(mlm_model(dir, "m"));
  const roberta::Batch batch = long_batch();
  std::vector<roberta::PreparedText> texts;
  for (size_t b = 0; b < batch.num_sequences(); ++b)
    texts.push_back({.ids = std::vector<int32_t>(batch.ids.begin() + static_cast<ptrdiff_t>(batch.offsets[b]),
                                                 batch.ids.begin() + static_cast<ptrdiff_t>(batch.offsets[b + 1]))});
  const std::vector<SparseVector> got = enc.run(texts);
  roberta::ForwardOptions whole;
  whole.logits = true;
  const roberta::Matrix logits = enc.text_preparer().model().forward(batch, whole).logits;
  ASSERT_EQ(got.size(), texts.size());
  for (size_t b = 0; b < texts.size(); ++b) {
    std::vector<float> dense(logits.cols, 0.0f);
    for (size_t i = 0; i < got[b].indices.size(); ++i) dense[static_cast<size_t>(got[b].indices[i])] = got[b].values[i];
    for (size_t v = 0; v < logits.cols; ++v) {
      float m = -INFINITY;
      for (size_t t = batch.offsets[b]; t < batch.offsets[b + 1]; ++t) m = std::max(m, logits.row(t)[v]);
      ASSERT_EQ(dense[v], std::log1p(std::max(m, 0.0f))) << "text " << b << " id " << v;
    }
  }
}

TEST(SparseEncoder, KeepLargestKeepsTheKHeaviestInIdOrder) {
  const SparseVector v{{3, 8, 10, 20, 41}, {0.5f, 2.0f, 0.5f, 1.0f, 3.0f}};
  const SparseVector top3 = roberta::keep_largest(v, 3);
  EXPECT_EQ(top3.indices, (std::vector<int32_t>{8, 20, 41}));
  EXPECT_EQ(top3.values, (std::vector<float>{2.0f, 1.0f, 3.0f}));
  const SparseVector tie = roberta::keep_largest(v, 4);  // 0.5 at ids 3 and 10: the lower id stays
  EXPECT_EQ(tie.indices, (std::vector<int32_t>{3, 8, 20, 41}));
  EXPECT_EQ(roberta::keep_largest(v, 0).indices, v.indices);
  EXPECT_EQ(roberta::keep_largest(v, 9).indices, v.indices);
  const SparseVector w{{8, 9, 41}, {4.0f, 7.0f, 0.5f}};
  EXPECT_DOUBLE_EQ(roberta::sparse_dot(v, w), 2.0 * 4.0 + 3.0 * 0.5);
  EXPECT_DOUBLE_EQ(roberta::sparse_dot(v, SparseVector{}), 0.0);
}

// A random MLM model as a SparseEncoder folder with this SpladePooling config and these modules.
std::filesystem::path splade_folder(const roberta::test::TempDir& dir, const std::string& name,
                                    const std::string& pooling_config, const std::string& modules) {
  const auto out = mlm_model(dir, name);
  std::filesystem::create_directories(out / "1_SpladePooling");
  roberta::test::write_text(out / "1_SpladePooling" / "config.json", pooling_config);
  roberta::test::write_text(out / "modules.json", modules);
  return out;
}

const char* kModules = R"([{"path": "", "type": "sentence_transformers.sparse_encoder.models.MLMTransformer"},
                           {"path": "1_SpladePooling", "type": "sentence_transformers.sparse_encoder.models.SpladePooling"}])";

TEST(SparseEncoder, FolderConfigAndItsErrors) {
  roberta::test::TempDir dir;
  const auto sum = splade_folder(dir, "sum", R"({"pooling_strategy": "sum", "activation_function": "log1p_relu"})",
                                 kModules);
  const roberta::SparseEncoder enc = roberta::SparseEncoder::load(sum);
  EXPECT_EQ(enc.pooling().strategy, roberta::SpladePoolingConfig::Strategy::kSum);
  EXPECT_EQ(enc.pooling().activation, roberta::SpladePoolingConfig::Activation::kLog1pRelu);
  EXPECT_EQ(enc.dimension(), 50265u);
  const auto expect_error = [](const std::filesystem::path& folder, const std::string& words) {
    try {
      (void)roberta::SparseEncoder::load(folder);
      ADD_FAILURE() << "no error for " << folder;
    } catch (const roberta::Error& e) {
      EXPECT_EQ(e.kind(), roberta::ErrorKind::kInvalidModel);
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_error(splade_folder(dir, "mean", R"({"pooling_strategy": "mean"})", kModules),
               "1_SpladePooling/config.json: pooling_strategy \"mean\" is not max or sum");
  expect_error(splade_folder(dir, "gelu", R"({"activation_function": "gelu"})", kModules),
               "activation_function \"gelu\" is not relu or log1p_relu");
  expect_error(splade_folder(dir, "number", R"({"pooling_strategy": 1})", kModules),
               "field \"pooling_strategy\" must be a string");
  expect_error(splade_folder(dir, "order", "{}",
                             R"([{"path": "1_SpladePooling", "type": "sentence_transformers.sparse_encoder.models.SpladePooling"},
                                 {"path": "", "type": "sentence_transformers.sparse_encoder.models.MLMTransformer"}])"),
               "must come first");
  expect_error(splade_folder(dir, "csr", "{}",
                             R"([{"path": "", "type": "sentence_transformers.sparse_encoder.models.MLMTransformer"},
                                 {"path": "1_SpladePooling", "type": "sentence_transformers.sparse_encoder.models.SpladePooling"},
                                 {"path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])"),
               "after SpladePooling: not supported");
  // The dense Embedder refuses such a folder's embeddings, naming the sparse way.
  const roberta::Embedder dense = roberta::Embedder::load(sum);
  try {
    (void)dense(std::vector<std::string>{"a text"});
    ADD_FAILURE() << "dense embeddings of a SparseEncoder folder";
  } catch (const roberta::Error& e) {
    EXPECT_NE(std::string(e.what()).find("SparseEncoder"), std::string::npos) << e.what();
  }
  expect_error(mlm_model(dir, "classifier", "sequence"), "MLM head");
}

}  // namespace
