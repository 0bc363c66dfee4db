#include "roberta/config.h"

#include <cmath>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "roberta/error.h"

namespace roberta {

Activation parse_activation(const std::string& name) {
  static const std::unordered_map<std::string, Activation> kNames = {
      {"gelu", Activation::kGelu},           {"gelu_python", Activation::kGelu},
      {"gelu_new", Activation::kGeluTanh},   {"gelu_pytorch_tanh", Activation::kGeluTanh},
      {"gelu_fast", Activation::kGeluTanh},  {"gelu_accurate", Activation::kGeluTanh},
      {"gelu_10", Activation::kGelu10},      {"quick_gelu", Activation::kQuickGelu},
      {"laplace", Activation::kLaplace},     {"relu", Activation::kRelu},
      {"relu2", Activation::kRelu2},         {"relu6", Activation::kRelu6},
      {"leaky_relu", Activation::kLeakyRelu}, {"silu", Activation::kSilu},
      {"swish", Activation::kSilu},          {"tanh", Activation::kTanh},
      {"sigmoid", Activation::kSigmoid},     {"mish", Activation::kMish},
      {"linear", Activation::kLinear},
  };
  const auto it = kNames.find(name);
  if (it == kNames.end()) throw Error("hidden_act \"" + name + "\" is not supported");
  return it->second;
}

namespace {

using json = nlohmann::json;

int64_t read_int(const json& doc, const char* key, const std::string& source, int64_t lo, int64_t hi,
                 std::optional<int64_t> fallback = std::nullopt) {
  if (!doc.contains(key) || doc[key].is_null()) {
    if (fallback) return *fallback;
    throw Error(source + ": missing field \"" + key + "\"");
  }
  const json& v = doc[key];
  int64_t value;
  if (v.is_number_integer()) {
    value = v.get<int64_t>();
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()) &&
             std::abs(v.get<double>()) < 1e15) {
    value = static_cast<int64_t>(v.get<double>());  // 768.0 is accepted, 768.5 is not
  } else {
    throw Error(source + ": field \"" + key + "\" must be an integer, got " + v.dump());
  }
  if (value < lo || value > hi)
    throw Error(source + ": field \"" + key + "\" = " + std::to_string(value) + " is outside [" + std::to_string(lo) +
                ", " + std::to_string(hi) + "]");
  return value;
}

}  // namespace

ModelConfig ModelConfig::from_json_text(const std::string& text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(source + ": invalid JSON at byte " + std::to_string(e.byte));
  } catch (const json::exception& e) {
    throw Error(source + ": invalid JSON: " + e.what());
  }
  if (!doc.is_object()) throw Error(source + ": expected a JSON object");
  ModelConfig c;
  if (doc.contains("model_type") && doc["model_type"].is_string()) c.model_type = doc["model_type"];
  if (c.model_type != "roberta" && c.model_type != "xlm-roberta" && c.model_type != "camembert")
    throw Error(source + ": model_type \"" + c.model_type + "\" is not a RoBERTa model");
  c.vocab_size = read_int(doc, "vocab_size", source, 1, 10'000'000);
  c.hidden_size = read_int(doc, "hidden_size", source, 1, 65536);
  c.num_hidden_layers = read_int(doc, "num_hidden_layers", source, 1, 1000);
  c.num_attention_heads = read_int(doc, "num_attention_heads", source, 1, 65536);
  c.intermediate_size = read_int(doc, "intermediate_size", source, 1, 1'000'000);
  c.max_position_embeddings = read_int(doc, "max_position_embeddings", source, 1, 1'000'000);
  c.type_vocab_size = read_int(doc, "type_vocab_size", source, 1, 1'000'000, 2);
  c.pad_token_id = read_int(doc, "pad_token_id", source, 0, c.vocab_size - 1, 1);
  if (c.hidden_size % c.num_attention_heads != 0)
    throw Error(source + ": hidden_size " + std::to_string(c.hidden_size) + " is not divisible by num_attention_heads " +
                std::to_string(c.num_attention_heads));
  if (c.max_position_embeddings <= c.pad_token_id + 1)
    throw Error(source + ": max_position_embeddings " + std::to_string(c.max_position_embeddings) +
                " leaves no position after pad_token_id + 1");
  if (doc.contains("layer_norm_eps")) {
    const json& v = doc["layer_norm_eps"];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0 || v.get<double>() > 1)
      throw Error(source + ": field \"layer_norm_eps\" must be a number in (0, 1], got " + v.dump());
    c.layer_norm_eps = v.get<double>();
  }
  if (doc.contains("hidden_act")) {
    if (!doc["hidden_act"].is_string()) throw Error(source + ": field \"hidden_act\" must be a string");
    c.hidden_act = doc["hidden_act"];
  }
  try {
    c.activation = parse_activation(c.hidden_act);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
  if (doc.contains("position_embedding_type") && !doc["position_embedding_type"].is_null()) {
    if (!doc["position_embedding_type"].is_string())
      throw Error(source + ": field \"position_embedding_type\" must be a string");
    c.position_embedding_type = doc["position_embedding_type"];
    if (c.position_embedding_type != "absolute")
      throw Error(source + ": position_embedding_type \"" + c.position_embedding_type +
                  "\" is not supported (only \"absolute\")");
  }
  return c;
}

ModelConfig ModelConfig::from_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return from_json_text(ss.str(), path.string());
}

}  // namespace roberta
