#pragma once
// The RobertaConfig fields the computation depends on, read from a model's config.json.
//
//   roberta::ModelConfig c = roberta::ModelConfig::from_file("models/demo/config.json");
//   c.hidden_size / c.num_attention_heads  // head size
#include <cstdint>
#include <filesystem>
#include <string>

namespace roberta {

// Hugging Face's `hidden_act` names (ACT2FN), grouped by the function they compute.
enum class Activation {
  kGelu,        // gelu, gelu_python: x * Phi(x) with erf
  kGeluTanh,    // gelu_new, gelu_pytorch_tanh, gelu_fast, gelu_accurate
  kGelu10,      // gelu_10: erf GELU clipped to [-10, 10]
  kQuickGelu,   // quick_gelu: x * sigmoid(1.702 x)
  kLaplace,     // laplace
  kRelu,
  kRelu2,       // relu(x)^2
  kRelu6,
  kLeakyRelu,   // slope 0.01
  kSilu,        // silu, swish
  kTanh,
  kSigmoid,
  kMish,
  kLinear,
};

// Throws roberta::Error for a name Hugging Face does not define (or `prelu`, which has weights).
Activation parse_activation(const std::string& name);

struct ModelConfig {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;
  int64_t type_vocab_size = 1;
  int64_t pad_token_id = 1;
  double layer_norm_eps = 1e-5;
  std::string hidden_act = "gelu";
  Activation activation = Activation::kGelu;
  std::string model_type = "roberta";
  std::string position_embedding_type = "absolute";

  int64_t head_size() const { return hidden_size / num_attention_heads; }
  // Longest sequence the position embeddings allow (RoBERTa offsets positions by pad_token_id + 1).
  int64_t max_sequence_length() const { return max_position_embeddings - pad_token_id - 1; }

  // Parses and validates; errors name the source and the field.
  static ModelConfig from_json_text(const std::string& text, const std::string& source);
  static ModelConfig from_file(const std::filesystem::path& path);
};

}  // namespace roberta
