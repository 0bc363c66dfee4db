#include "roberta/config.h"

#include <cmath>
#include <optional>
#include <nlohmann/json.hpp>

#include "activation_names.h"
#include "roberta/error.h"
#include "util/files.h"

namespace roberta {

namespace {

using json = nlohmann::json;

// Everything wrong in config.json is a model error.
[[noreturn]] void fail(const std::string& message) { throw Error(message, ErrorKind::kInvalidModel); }

int64_t read_int(const json& doc, const char* key, const std::string& source, int64_t lo, int64_t hi,
                 std::optional<int64_t> fallback = std::nullopt) {
  if (!doc.contains(key) || doc[key].is_null()) {
    if (fallback) return *fallback;
    fail(source + ": missing field \"" + key + "\"");
  }
  const json& v = doc[key];
  int64_t value;
  if (v.is_number_integer()) {
    value = v.get<int64_t>();
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()) &&
             std::abs(v.get<double>()) < 1e15) {
    value = static_cast<int64_t>(v.get<double>());  // 768.0 is accepted, 768.5 is not
  } else {
    fail(source + ": field \"" + key + "\" must be an integer, got " + v.dump());
  }
  if (value < lo || value > hi)
    fail(source + ": field \"" + key + "\" = " + std::to_string(value) + " is outside [" + std::to_string(lo) +
                ", " + std::to_string(hi) + "]");
  return value;
}

// id2label / label2id / num_labels / problem_type / architectures, as PretrainedConfig reads them.
void read_labels(const json& doc, const std::string& source, ModelConfig& c) {
  if (doc.contains("architectures") && doc["architectures"].is_array())
    for (const auto& a : doc["architectures"])
      if (a.is_string()) c.architectures.push_back(a.get<std::string>());
  int64_t n = 2;  // PretrainedConfig's default
  if (doc.contains("num_labels") && !doc["num_labels"].is_null()) n = read_int(doc, "num_labels", source, 1, 1'000'000);
  const bool has_id2label = doc.contains("id2label") && !doc["id2label"].is_null();
  if (has_id2label) {
    const json& m = doc["id2label"];
    if (!m.is_object() || m.empty()) fail(source + ": field \"id2label\" must be a non-empty object {\"0\": \"LABEL\", ...}");
    n = static_cast<int64_t>(m.size());
  }
  c.id2label.assign(static_cast<size_t>(n), "");
  for (int64_t i = 0; i < n; ++i) c.id2label[static_cast<size_t>(i)] = "LABEL_" + std::to_string(i);
  if (has_id2label)
    for (const auto& [key, value] : doc["id2label"].items()) {
      size_t used = 0;
      long long id = -1;
      try {
        id = std::stoll(key, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != key.size() || id < 0 || id >= n)
        fail(source + ": id2label key \"" + key + "\" is not an id in [0, " + std::to_string(n) + ")");
      if (!value.is_string()) fail(source + ": id2label[\"" + key + "\"] must be a string");
      c.id2label[static_cast<size_t>(id)] = value.get<std::string>();
    }
  c.label2id.clear();
  if (doc.contains("label2id") && doc["label2id"].is_object() && !doc["label2id"].empty()) {
    for (const auto& [key, value] : doc["label2id"].items()) {
      // transformers does not check the values; ids written as strings ("0") are taken as ids.
      size_t used = 0;
      long long id = -1;
      if (value.is_number_integer()) {
        id = value.get<int64_t>(), used = 1;
      } else if (value.is_string()) {
        const std::string text = value.get<std::string>();
        try {
          id = std::stoll(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != text.size() || text.empty()) used = 0;
      }
      if (!used) fail(source + ": label2id[\"" + key + "\"] must be an integer id, got " + value.dump());
      c.label2id[key] = id;
    }
  } else {
    for (size_t i = 0; i < c.id2label.size(); ++i) c.label2id[c.id2label[i]] = static_cast<int64_t>(i);
  }
  if (doc.contains("problem_type") && !doc["problem_type"].is_null()) {
    if (!doc["problem_type"].is_string()) fail(source + ": field \"problem_type\" must be a string");
    c.problem_type = doc["problem_type"];
    if (c.problem_type != "single_label_classification" && c.problem_type != "multi_label_classification" &&
        c.problem_type != "regression")
      fail(source + ": problem_type \"" + c.problem_type +
           "\" is not one of single_label_classification, multi_label_classification, regression");
  }
}

}  // namespace

ModelConfig ModelConfig::from_json_text(const std::string& text, const std::string& source) {
  const json doc = util::parse_json(text, source);
  if (!doc.is_object()) fail(source + ": expected a JSON object");
  ModelConfig c;
  if (doc.contains("model_type") && doc["model_type"].is_string()) c.model_type = doc["model_type"];
  if (c.model_type != "roberta" && c.model_type != "xlm-roberta" && c.model_type != "camembert" &&
      c.model_type != "data2vec-text" && c.model_type != "roberta-prelayernorm")
    fail(source + ": model_type \"" + c.model_type +
         "\" is not a RoBERTa model (roberta, xlm-roberta, camembert, data2vec-text, roberta-prelayernorm)");
  // A field the file leaves out takes the default of transformers' config class for the model type
  // (RobertaConfig's are BertConfig's but for the vocabulary; XLM-R, CamemBERT and data2vec-text
  // keep BertConfig's 30522).
  const bool bert_vocab =
      c.model_type == "xlm-roberta" || c.model_type == "camembert" || c.model_type == "data2vec-text";
  c.vocab_size = read_int(doc, "vocab_size", source, 1, 10'000'000, bert_vocab ? 30522 : 50265);
  c.hidden_size = read_int(doc, "hidden_size", source, 1, 65536, 768);
  c.num_hidden_layers = read_int(doc, "num_hidden_layers", source, 1, 1000, 12);
  c.num_attention_heads = read_int(doc, "num_attention_heads", source, 1, 65536, 12);
  c.intermediate_size = read_int(doc, "intermediate_size", source, 1, 1'000'000, 3072);
  c.max_position_embeddings = read_int(doc, "max_position_embeddings", source, 1, 1'000'000, 512);
  c.type_vocab_size = read_int(doc, "type_vocab_size", source, 1, 1'000'000, 2);
  c.pad_token_id = read_int(doc, "pad_token_id", source, 0, c.vocab_size - 1, 1);
  if (c.hidden_size % c.num_attention_heads != 0)
    fail(source + ": hidden_size " + std::to_string(c.hidden_size) + " is not divisible by num_attention_heads " +
                std::to_string(c.num_attention_heads));
  if (c.max_position_embeddings <= c.pad_token_id + 1)
    fail(source + ": max_position_embeddings " + std::to_string(c.max_position_embeddings) +
                " leaves no position after pad_token_id + 1");
  if (doc.contains("layer_norm_eps")) {
    const json& v = doc["layer_norm_eps"];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0 || v.get<double>() > 1)
      fail(source + ": field \"layer_norm_eps\" must be a number in (0, 1], got " + v.dump());
    c.layer_norm_eps = v.get<double>();
  }
  // A decoder (RobertaForCausalLM's is_decoder) attends causally, each token to those before it.
  for (const char* key : {"is_decoder", "add_cross_attention"})
    if (doc.contains(key) && doc[key].is_boolean() && doc[key].get<bool>())
      fail(source + ": \"" + key + "\": true (a decoder, as RobertaForCausalLM) is not supported: this engine runs " +
           "RoBERTa as an encoder, every token attending to every other");
  if (doc.contains("hidden_act")) {
    if (!doc["hidden_act"].is_string()) fail(source + ": field \"hidden_act\" must be a string");
    c.hidden_act = doc["hidden_act"];
  }
  try {
    activation_from_name(c.hidden_act);
  } catch (const Error& e) {
    fail(source + ": " + e.what());
  }
  if (doc.contains("position_embedding_type") && !doc["position_embedding_type"].is_null()) {
    if (!doc["position_embedding_type"].is_string())
      fail(source + ": field \"position_embedding_type\" must be a string");
    c.position_embedding_type = doc["position_embedding_type"];
    if (c.position_embedding_type != "absolute" && c.position_embedding_type != "relative_key" &&
        c.position_embedding_type != "relative_key_query")
      fail(source + ": position_embedding_type \"" + c.position_embedding_type +
           "\" is not supported (absolute, relative_key, relative_key_query)");
  }
  read_labels(doc, source, c);
  return c;
}

ModelConfig ModelConfig::from_file(const std::filesystem::path& path) {
  return from_json_text(util::read_file(path), path.string());
}

}  // namespace roberta
