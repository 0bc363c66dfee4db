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

}  // namespace

ModelConfig ModelConfig::from_json_text(const std::string& text, const std::string& source) {
  const json doc = util::parse_json(text, source);
  if (!doc.is_object()) fail(source + ": expected a JSON object");
  ModelConfig c;
  if (doc.contains("model_type") && doc["model_type"].is_string()) c.model_type = doc["model_type"];
  if (c.model_type != "roberta" && c.model_type != "xlm-roberta" && c.model_type != "camembert")
    fail(source + ": model_type \"" + c.model_type + "\" is not a RoBERTa model");
  c.vocab_size = read_int(doc, "vocab_size", source, 1, 10'000'000);
  c.hidden_size = read_int(doc, "hidden_size", source, 1, 65536);
  c.num_hidden_layers = read_int(doc, "num_hidden_layers", source, 1, 1000);
  c.num_attention_heads = read_int(doc, "num_attention_heads", source, 1, 65536);
  c.intermediate_size = read_int(doc, "intermediate_size", source, 1, 1'000'000);
  c.max_position_embeddings = read_int(doc, "max_position_embeddings", source, 1, 1'000'000);
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
    if (c.position_embedding_type != "absolute")
      fail(source + ": position_embedding_type \"" + c.position_embedding_type +
                  "\" is not supported (only \"absolute\")");
  }
  return c;
}

ModelConfig ModelConfig::from_file(const std::filesystem::path& path) {
  return from_json_text(util::read_file(path), path.string());
}

}  // namespace roberta
