#pragma once
// The RoBERTa encoder: embeddings, N encoder blocks (post-LayerNorm, or pre-LayerNorm for
// roberta-prelayernorm), the MLM head and the pooler, in fp32, bf16 or int8 (LoadOptions).
//
//   roberta::Model model = roberta::Model::load("models/demo");   // config.json + model.safetensors
//   roberta::Tokenizer tok = roberta::Tokenizer::from_dir("models/demo");
//   roberta::Batch batch;                                // sequences packed one after another
//   batch.add_sequence(tok.encode("The capital of France is Paris.").ids);
//   batch.add_sequence(tok.encode("The <mask> sat.").ids);  // <s> The <mask>: its row is offsets[1] + 2
//   roberta::Outputs out = model.forward(batch, {.logits = true, .logit_rows = {batch.offsets[1] + 2}});
//   out.last_hidden_state.row(0)   // hidden state of the first token of the first sequence
//   out.logits.row(0)              // the MLM logits of the <mask> (the one row asked for)
//
// A loaded Model is immutable: call forward() from any number of threads at once.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "roberta/config.h"

namespace roberta {

// Sequences packed end to end, without padding. Sequence b is tokens [offsets[b], offsets[b+1]).
struct Batch {
  std::vector<int32_t> ids{};
  std::vector<int32_t> type_ids{};  // empty: all 0
  std::vector<size_t> offsets{0};

  static Batch from_sequences(const std::vector<std::vector<int32_t>>& sequences);
  // The mask-1 tokens of a padded (B, L) batch, row by row (type_ids empty: all 0). `where`, when
  // given, receives b * L + l of each packed token, to scatter outputs back to the padded layout.
  static Batch from_padded(std::span<const int64_t> ids, std::span<const int64_t> mask,
                           std::span<const int64_t> type_ids, size_t B, size_t L,
                           std::vector<size_t>* where = nullptr);
  void add_sequence(std::span<const int32_t> sequence_ids);
  size_t num_sequences() const { return offsets.size() - 1; }
  size_t num_tokens() const { return ids.size(); }
};

// A row-major float matrix.
struct Matrix {
  size_t rows = 0, cols = 0;
  std::vector<float> data{};

  Matrix() = default;
  Matrix(size_t r, size_t c) : rows(r), cols(c), data(r * c) {}
  float* row(size_t r) { return data.data() + r * cols; }
  const float* row(size_t r) const { return data.data() + r * cols; }
};

struct ForwardOptions {
  bool all_hidden_states = false;  // also return the embedding output and every layer's output
  bool logits = false;             // MLM logits (needs an LM head)
  std::vector<size_t> logit_rows{};  // packed token indices to compute logits for; empty: all tokens
  // With logits: the logits go to this function in chunks of rows instead of into
  // Outputs::logits, so that a reduction over tokens (a sparse embedding's max per vocabulary
  // entry) never holds all rows x vocab logits at once. `first` is the chunk's first row among the
  // logit rows; the chunk is (rows, vocab). Called on the calling thread, in row order.
  std::function<void(size_t first, const Matrix& chunk)> logits_in_chunks{};
  bool pooler = false;             // tanh(dense(hidden state of each sequence's first token))
  bool sequence_logits = false;    // RobertaForSequenceClassification's classifier on each <s>
  bool token_logits = false;       // RobertaForTokenClassification's classifier on every token
  bool span_logits = false;        // RobertaForQuestionAnswering's start and end logits
};

struct Outputs {
  Matrix last_hidden_state;           // (tokens, hidden)
  std::vector<Matrix> hidden_states;  // num_layers + 1 matrices (tokens, hidden) when requested
  Matrix logits;                      // (logit rows, vocab)
  Matrix pooler_output;               // (sequences, hidden)
  Matrix sequence_logits;             // (sequences, num_labels)
  Matrix token_logits;                // (tokens, num_labels)
  std::vector<float> start_logits;    // (tokens)
  std::vector<float> end_logits;      // (tokens)
};

// The task heads a checkpoint may carry (recognised from its tensor names).
enum class Head {
  kMaskedLm,                // lm_head.*                       RobertaForMaskedLM
  kPooler,                  // pooler.dense.*                  RobertaModel
  kSequenceClassification,  // classifier.dense, .out_proj     RobertaForSequenceClassification
  kTokenClassification,     // classifier.weight               RobertaForTokenClassification
  kQuestionAnswering,       // qa_outputs.*                    RobertaForQuestionAnswering
};
const char* head_name(Head head);  // "MLM head", "pooler", "sequence classification head", ...

// How the encoder's matrices are held. kBF16 (opt-in) rounds them to bfloat16 and multiplies
// with AVX512-BF16 where the CPU has it: half the memory traffic, about 3 significant digits.
// kInt8 (opt-in) quantizes them per output channel to int8 and each token's input per call
// (dynamic quantization), summing in int32: on AMX tiles, with AVX512-VNNI or AVX-VNNI, or with
// vpmaddubsw (AVX-512 or AVX2) where the CPU has none of them.
enum class WeightType { kF32, kBF16, kInt8 };

struct LoadOptions {
  WeightType weights = WeightType::kF32;
};

// The precision the command-line tools and the server use unless told otherwise: kBF16 where the
// CPU multiplies bf16 natively (AVX512-BF16; Intel's AMX CPUs have it too) and ROBERTA_ISA allows
// it, kF32 elsewhere. There bf16 runs much faster than fp32 and almost always agrees with fp32's
// top-1 predictions (docs/performance.md#figures-behind-the-code). The library's own default stays
// kF32 (exact parity with PyTorch).
WeightType recommended_weight_type();

class Model {
 public:
  // Loads config.json and the safetensors weights of a Hugging Face model folder. Accepts names
  // with or without the `roberta.` prefix, legacy gamma/beta LayerNorm names, a tied or missing
  // decoder, and no pooler or LM head. Errors name the file, field or tensor.
  static Model load(const std::filesystem::path& dir, const LoadOptions& options = {});

  Outputs forward(const Batch& batch, const ForwardOptions& options = {}) const;

  const ModelConfig& config() const;
  bool has_lm_head() const;
  bool has_pooler() const;
  bool has_head(Head head) const;
  // Throws roberta::Error (kInvalidModel) naming the folder and the missing tensors when the model
  // lacks `head`; `purpose` says what needed it ("so it cannot classify texts").
  void require_head(Head head, const std::string& purpose) const;
  size_t parameter_count() const;
  // Bytes of weights the model holds in memory (mapped file data used in place included; the MLM
  // decoder's packed copy from the first forward pass that computes logits on).
  size_t weight_bytes() const;
  std::vector<std::string> files() const;
  // "F32", "F16", ... : the dtypes stored in the checkpoint, with tensor counts.
  std::string dtype_summary() const;
  const std::filesystem::path& dir() const;


 private:
  struct Impl;  // the loaded weights and parts (src/model.cpp)
  explicit Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace roberta
