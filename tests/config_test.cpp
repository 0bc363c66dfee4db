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
  expect_error([&] { parse(with("is_decoder", true)); }, {"config.json", "is_decoder", "not supported"});
  expect_error([&] { parse(with("label2id", nlohmann::json{{"a", "x"}})); }, {"label2id[\"a\"]", "\"x\""});
  expect_error([&] { parse(with("hidden_size", 0)); }, {"hidden_size", "outside"});
  expect_error([&] { parse(with("num_hidden_layers", -3)); }, {"num_hidden_layers", "-3"});
  expect_error([&] { parse(with("vocab_size", 1e12)); }, {"vocab_size"});
  expect_error([&] { parse(with("intermediate_size", 64.5)); }, {"intermediate_size", "integer"});
  expect_error([&] { parse(with("num_attention_heads", "4")); }, {"num_attention_heads", "integer"});
  expect_error([&] { parse(with("num_attention_heads", 5)); }, {"not divisible", "num_attention_heads"});
  expect_error([&] { parse(with("layer_norm_eps", -1)); }, {"layer_norm_eps"});
  expect_error([&] { parse(with("hidden_act", "prelu")); }, {"hidden_act", "prelu"});
  expect_error([&] { parse(with("position_embedding_type", "rotary")); }, {"position_embedding_type", "rotary"});
  expect_error([&] { parse(with("id2label", nlohmann::json{{"0", "a"}, {"5", "b"}})); }, {"id2label", "\"5\""});
  expect_error([&] { parse(with("problem_type", "ranking")); }, {"problem_type", "ranking"});
  expect_error([&] { parse(with("model_type", "gpt2")); }, {"model_type", "gpt2"});
  expect_error([&] { parse(with("pad_token_id", 100)); }, {"pad_token_id"});
  expect_error([&] { roberta::ModelConfig::from_json_text("{\"vocab_size\": ", "config.json"); }, {"config.json", "invalid JSON"});
  // Found by fuzzing: a number too large for a double is a JSON error, not a crash.
  expect_error([&] { roberta::ModelConfig::from_json_text("{\"layer_norm_eps\": 1e412}", "config.json"); },
               {"config.json", "invalid JSON"});
}

// What transformers' config classes default to (configuration_roberta.py: RobertaConfig's
// defaults; XLMRobertaConfig and CamembertConfig keep vocab_size 30522), for a file that leaves
// fields out; is_decoder false and ids written as strings are read as transformers reads them.
TEST(Config, FieldsLeftOutTakeTransformersDefaults) {
  nlohmann::json j = {{"model_type", "roberta"}};
  auto c = parse(j);
  EXPECT_EQ(c.vocab_size, 50265);
  EXPECT_EQ(c.hidden_size, 768);
  EXPECT_EQ(c.num_hidden_layers, 12);
  EXPECT_EQ(c.num_attention_heads, 12);
  EXPECT_EQ(c.intermediate_size, 3072);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_EQ(c.type_vocab_size, 2);
  EXPECT_EQ(c.pad_token_id, 1);
  EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-12);
  EXPECT_EQ(parse({{"model_type", "xlm-roberta"}}).vocab_size, 30522);
  EXPECT_EQ(parse({{"model_type", "camembert"}}).vocab_size, 30522);
  auto k = base_config();
  k["is_decoder"] = false;
  k["id2label"] = {{"0", "neg"}, {"1", "pos"}};
  k["label2id"] = {{"neg", "0"}, {"pos", 1}};
  c = parse(k);
  EXPECT_EQ(c.label2id.at("neg"), 0);
  EXPECT_EQ(c.label2id.at("pos"), 1);
}

nlohmann::json with_field(nlohmann::json j, const char* key, nlohmann::json value) {
  j[key] = std::move(value);
  return j;
}

// Labels as transformers' PretrainedConfig reads them.
TEST(Config, LabelsAsPretrainedConfigReadsThem) {
  auto j = base_config();
  EXPECT_EQ(parse(j).id2label, (std::vector<std::string>{"LABEL_0", "LABEL_1"}));  // the default: 2 labels
  j["num_labels"] = 3;
  EXPECT_EQ(parse(j).id2label, (std::vector<std::string>{"LABEL_0", "LABEL_1", "LABEL_2"}));
  j["id2label"] = {{"2", "entailment"}, {"0", "contradiction"}, {"1", "neutral"}};
  j["label2id"] = {{"contradiction", 0}, {"entailment", 2}, {"neutral", 1}};
  j["problem_type"] = "single_label_classification";
  j["architectures"] = {"RobertaForSequenceClassification"};
  const auto c = parse(j);
  EXPECT_EQ(c.id2label, (std::vector<std::string>{"contradiction", "neutral", "entailment"}));
  EXPECT_EQ(c.label2id.at("entailment"), 2);
  EXPECT_EQ(c.num_labels(), 3);
  EXPECT_EQ(c.problem_type, "single_label_classification");
  EXPECT_EQ(c.architectures, (std::vector<std::string>{"RobertaForSequenceClassification"}));
  try {
    parse(with_field(base_config(), "problem_type", "ranking"));
  } catch (const roberta::Error& e) {
    EXPECT_EQ(e.kind(), roberta::ErrorKind::kInvalidModel);
  }
}

}  // namespace
