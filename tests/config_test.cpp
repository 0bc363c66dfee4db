// config.json: every field read, every bad value named, errors of the model kind.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "roberta/config.h"
#include "roberta/error.h"
#include "test_util.h"

namespace {

using roberta::test::expect_error;

nlohmann::json base_config() {
  return {{"model_type", "roberta"}, {"vocab_size", 100}, {"hidden_size", 32}, {"num_hidden_layers", 2},
          {"num_attention_heads", 4}, {"intermediate_size", 64}, {"max_position_embeddings", 66},
          {"type_vocab_size", 1}, {"layer_norm_eps", 1e-5}, {"pad_token_id", 1}, {"hidden_act", "gelu"}};
}

roberta::ModelConfig parse(const nlohmann::json& j) { return roberta::ModelConfig::from_json_text(j.dump(), "config.json"); }

TEST(Config, ReadsEveryField) {
  auto j = base_config();
  j["hidden_act"] = "gelu_new";
  const auto c = parse(j);
  EXPECT_EQ(c.vocab_size, 100);
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.head_size(), 8);
  EXPECT_EQ(c.intermediate_size, 64);
  EXPECT_EQ(c.max_sequence_length(), 64);
  EXPECT_EQ(c.hidden_act, "gelu_new");
  EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-5);
}

TEST(Config, BadValuesNameTheField) {
  const auto with = [](const char* key, nlohmann::json value) {
    auto j = base_config();
    if (value.is_null())
      j.erase(key);
    else
      j[key] = value;
    return j;
  };
  expect_error([&] { parse(with("hidden_size", nullptr)); }, {"config.json", "missing", "hidden_size"});
  expect_error([&] { parse(with("hidden_size", 0)); }, {"hidden_size", "outside"});
  expect_error([&] { parse(with("num_hidden_layers", -3)); }, {"num_hidden_layers", "-3"});
  expect_error([&] { parse(with("vocab_size", 1e12)); }, {"vocab_size"});
  expect_error([&] { parse(with("intermediate_size", 64.5)); }, {"intermediate_size", "integer"});
  expect_error([&] { parse(with("num_attention_heads", "4")); }, {"num_attention_heads", "integer"});
  expect_error([&] { parse(with("num_attention_heads", 5)); }, {"not divisible", "num_attention_heads"});
  expect_error([&] { parse(with("layer_norm_eps", -1)); }, {"layer_norm_eps"});
  expect_error([&] { parse(with("hidden_act", "prelu")); }, {"hidden_act", "prelu"});
  expect_error([&] { parse(with("position_embedding_type", "relative_key")); }, {"position_embedding_type", "relative_key"});
  expect_error([&] { parse(with("model_type", "gpt2")); }, {"model_type", "gpt2"});
  expect_error([&] { parse(with("pad_token_id", 100)); }, {"pad_token_id"});
  expect_error([&] { roberta::ModelConfig::from_json_text("{\"vocab_size\": ", "config.json"); }, {"config.json", "invalid JSON"});
  // Found by fuzzing: a number too large for a double is a JSON error, not a crash.
  expect_error([&] { roberta::ModelConfig::from_json_text("{\"layer_norm_eps\": 1e412}", "config.json"); },
               {"config.json", "invalid JSON"});
}

}  // namespace
