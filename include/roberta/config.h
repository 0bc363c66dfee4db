#pragma once
// The RobertaConfig fields the computation depends on, read from a model's config.json.
//
//   roberta::ModelConfig c = roberta::ModelConfig::from_file("models/demo/config.json");
//   c.hidden_size / c.num_attention_heads  // head size
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace roberta {

struct ModelConfig {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;
  int64_t type_vocab_size = 1;
  int64_t pad_token_id = 1;
  double layer_norm_eps = 1e-12;  // RobertaConfig's default when config.json leaves it out
  std::string hidden_act = "gelu";  // validated: one of Hugging Face's ACT2FN names except prelu
  std::string model_type = "roberta";
  std::string position_embedding_type = "absolute";  // or relative_key, relative_key_query
  std::vector<std::string> architectures{};           // e.g. {"RobertaForSequenceClassification"}

  // Labels of a classification head, as transformers' PretrainedConfig reads them: id2label in id
  // order (num_labels entries; "LABEL_i" where the file names none, 2 labels when it says nothing),
  // label2id (the file's, else id2label inverted), and problem_type ("" when absent,
  // "single_label_classification", "multi_label_classification" or "regression").
  std::vector<std::string> id2label{"LABEL_0", "LABEL_1"};
  std::map<std::string, int64_t> label2id{{"LABEL_0", 0}, {"LABEL_1", 1}};
  std::string problem_type{};

  int64_t num_labels() const { return static_cast<int64_t>(id2label.size()); }

  int64_t head_size() const { return hidden_size / num_attention_heads; }
  // Longest sequence the position embeddings allow (RoBERTa offsets positions by pad_token_id + 1).
  int64_t max_sequence_length() const { return max_position_embeddings - pad_token_id - 1; }

  // Parses and validates; errors name the source and the field.
  static ModelConfig from_json_text(const std::string& text, const std::string& source);
  static ModelConfig from_file(const std::filesystem::path& path);
};

}  // namespace roberta
