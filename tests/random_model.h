#pragma once
// A tiny RoBERTa with random weights and a task head, written to a folder, for the pipeline tests.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace roberta::test {

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
};

// The shape of a random model: roberta-base's vocabulary, the rest small unless asked.
struct RandomShape {
  int64_t hidden = 8, heads = 2, intermediate = 16, layers = 1;
  std::string positions = "absolute";  // or relative_key, relative_key_query
};

// A RoBERTa with random weights and the given head ("sequence", "token", "qa", or "mlm": the MLM
// head with its decoder tied to the word embeddings), written as config.json + model.safetensors,
// with the roberta-base tokenizer beside it.
inline void write_random_model(const std::filesystem::path& dir, const std::string& head,
                               const std::vector<std::string>& labels, const RandomShape& shape) {
  const int64_t V = 50265, H = shape.hidden, I = shape.intermediate, P = 66, N = static_cast<int64_t>(labels.size());
  std::vector<Tensor> tensors = {{"roberta.embeddings.word_embeddings.weight", {V, H}},
                                 {"roberta.embeddings.position_embeddings.weight", {P, H}},
                                 {"roberta.embeddings.token_type_embeddings.weight", {1, H}},
                                 {"roberta.embeddings.LayerNorm.weight", {H}},
                                 {"roberta.embeddings.LayerNorm.bias", {H}}};
  for (int64_t i = 0; i < shape.layers; ++i) {
    const std::string l = "roberta.encoder.layer." + std::to_string(i) + ".";
    for (const char* m : {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
      tensors.push_back({l + m + ".weight", {H, H}});
      tensors.push_back({l + m + ".bias", {H}});
    }
    if (shape.positions != "absolute")
      tensors.push_back({l + "attention.self.distance_embedding.weight", {2 * P - 1, H / shape.heads}});
    tensors.push_back({l + "intermediate.dense.weight", {I, H}});
    tensors.push_back({l + "intermediate.dense.bias", {I}});
    tensors.push_back({l + "output.dense.weight", {H, I}});
    tensors.push_back({l + "output.dense.bias", {H}});
    for (const char* n : {"attention.output.LayerNorm", "output.LayerNorm"}) {
      tensors.push_back({l + n + ".weight", {H}});
      tensors.push_back({l + n + ".bias", {H}});
    }
  }
  std::string arch;
  if (head == "sequence") {
    tensors.push_back({"classifier.dense.weight", {H, H}});
    tensors.push_back({"classifier.dense.bias", {H}});
    tensors.push_back({"classifier.out_proj.weight", {N, H}});
    tensors.push_back({"classifier.out_proj.bias", {N}});
    arch = "RobertaForSequenceClassification";
  } else if (head == "token") {
    tensors.push_back({"classifier.weight", {N, H}});
    tensors.push_back({"classifier.bias", {N}});
    arch = "RobertaForTokenClassification";
  } else if (head == "mlm") {
    tensors.push_back({"lm_head.dense.weight", {H, H}});
    tensors.push_back({"lm_head.dense.bias", {H}});
    tensors.push_back({"lm_head.layer_norm.weight", {H}});
    tensors.push_back({"lm_head.layer_norm.bias", {H}});
    tensors.push_back({"lm_head.bias", {V}});
    arch = "RobertaForMaskedLM";
  } else {
    tensors.push_back({"qa_outputs.weight", {2, H}});
    tensors.push_back({"qa_outputs.bias", {2}});
    arch = "RobertaForQuestionAnswering";
  }
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const Tensor& t : tensors) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    const bool norm_weight = t.name.find("LayerNorm.weight") != std::string::npos ||
                             t.name.find("layer_norm.weight") != std::string::npos;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = norm_weight ? 1.0f + 0.1f * normal(gen) : normal(gen);
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + v.size() * 4}}};
    data.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  }
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  std::string file(8, '\0');
  uint64_t len = h.size();
  for (int i = 0; i < 8; ++i) file[static_cast<size_t>(i)] = static_cast<char>((len >> (8 * i)) & 0xFF);
  write_text(dir / "model.safetensors", file + h + data);
  nlohmann::json config = {{"model_type", "roberta"}, {"architectures", {arch}}, {"vocab_size", V}, {"hidden_size", H},
                 {"num_hidden_layers", shape.layers}, {"num_attention_heads", shape.heads}, {"intermediate_size", I},
                 {"max_position_embeddings", P}, {"type_vocab_size", 1}, {"pad_token_id", 1},
                 {"layer_norm_eps", 1e-5}, {"hidden_act", "gelu"}, {"position_embedding_type", shape.positions}};
  nlohmann::json id2label = nlohmann::json::object();
  for (size_t i = 0; i < labels.size(); ++i) id2label[std::to_string(i)] = labels[i];
  if (!labels.empty()) config["id2label"] = id2label;
  write_text(dir / "config.json", config.dump());
  std::filesystem::copy_file(std::filesystem::path(ROBERTA_SHARED_DIR) / "assets/roberta-base-tokenizer" / "tokenizer.json", dir / "tokenizer.json");
}

// A tiny one (H=8, 2 heads, 1 layer, 64 positions).
inline void write_random_model(const std::filesystem::path& dir, const std::string& head,
                               const std::vector<std::string>& labels) {
  write_random_model(dir, head, labels, RandomShape{});
}

}  // namespace roberta::test
