#pragma once
// Shared by pipelines_test.cpp, pipelines_options_test.cpp and pipelines_run_test.cpp: roberta-base's
// tokenizer, a config and logits for pipelines without weights, and slicing a text by code points.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "roberta/pipelines.h"

namespace roberta::test::pipelines {

inline const std::string kTokenizerDir = std::string(ROBERTA_SHARED_DIR) + "/assets/roberta-base-tokenizer";

// text[start:end] in code points (Python's slicing of a str).
inline std::string pipeline_test_slice(const std::string& text, int64_t start, int64_t end) {
  std::vector<size_t> at;
  for (size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) at.push_back(i);
  at.push_back(text.size());
  const auto b = at[static_cast<size_t>(start)], e = at[static_cast<size_t>(end)];
  return text.substr(b, e - b);
}

inline const Tokenizer& tokenizer() {
  static const Tokenizer t = Tokenizer::from_dir(kTokenizerDir);
  return t;
}

// A config with the golden's labels whose positions allow model_max_length tokens.
inline ModelConfig make_config(const nlohmann::json& c) {
  ModelConfig m;
  m.vocab_size = 50265;
  m.hidden_size = 8;
  m.num_hidden_layers = 1;
  m.num_attention_heads = 2;
  m.intermediate_size = 16;
  m.pad_token_id = 1;
  m.max_position_embeddings = c.value("model_max_length", 512) + 2;
  m.id2label = c["id2label"].get<std::vector<std::string>>();
  m.label2id.clear();
  for (size_t i = 0; i < m.id2label.size(); ++i) m.label2id[m.id2label[i]] = static_cast<int64_t>(i);
  m.problem_type = c.value("problem_type", std::string());
  return m;
}

inline Matrix matrix(const nlohmann::json& rows) {
  Matrix m(rows.size(), rows.at(0).size());
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t c = 0; c < m.cols; ++c) m.row(r)[c] = rows[r][c].get<float>();
  return m;
}

}  // namespace roberta::test::pipelines
