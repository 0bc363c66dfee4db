#pragma once
// Hugging Face's question-answering pipeline (extractive QA) on a RobertaForQuestionAnswering
// checkpoint. Load once, call from any thread.
//
//   roberta::QuestionAnswerer qa = roberta::QuestionAnswerer::load("models/roberta-base-squad2");
//   auto answers = qa("Where do I live?", "My name is Wolfgang and I live in Berlin");
//   answers[0].answer, answers[0].score, answers[0].start   // "Berlin", 0.92, 34 (code points)
//
// A long context is read in windows as HF does (the tokenizer's only_second truncation with
// overflowing tokens): each window is <s> question </s></s> part of the context </s>, at most
// max_seq_len tokens, and consecutive windows share doc_stride context tokens. Each window is
// scored on its own (softmax over the context tokens, spans of at most max_answer_len tokens);
// answers with the same text (case-insensitive) add their scores, as HF does.
//
// Steps for batching: prepare (windows), run (start/end logits of every window, packed), finish;
// run_batched does the three for many inputs.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "roberta/config.h"
#include "roberta/error.h"
#include "roberta/model.h"
#include "roberta/tokenizer.h"

namespace roberta {

struct QuestionAnswerOptions {
  size_t top_k = 1;            // answers to return (fewer when the context has fewer)
  std::optional<size_t> doc_stride;   // default: min(max_seq_len / 2, 128)
  size_t max_answer_len = 15;  // tokens
  std::optional<size_t> max_seq_len;  // default: min(the model's maximum, 384)
  // Accepted for parity with HF; its pipeline ignores it with a fast tokenizer, and so do we.
  size_t max_question_len = 64;
  bool handle_impossible_answer = false;  // allow the empty answer (score from <s>)
  bool align_to_words = true;  // widen answers to whole words (HF's default)
};

struct QuestionAnswer {
  float score = 0;
  int64_t start = 0, end = 0;  // code points of the context, as HF
  size_t byte_start = 0, byte_end = 0;
  std::string answer{};          // context[start:end]; "" for the impossible answer
};

// Span logits of the windows, packed in window order (one value per token).
struct SpanLogits {
  std::vector<float> start, end;
};

class QuestionAnswerer {
 public:
  struct Prepared {
    std::string question, context;
    std::vector<Encoding> windows{};  // <s> question </s></s> context part </s>
  };

  // Throws Error (kInvalidModel) without a question-answering head.
  QuestionAnswerer(Model model, Tokenizer tokenizer);
  // Without weights (prepare and finish only; run throws).
  QuestionAnswerer(Tokenizer tokenizer, ModelConfig config);
  static QuestionAnswerer load(const std::filesystem::path& dir, const LoadOptions& options = {});

  // The errors prepare throws for the options alone, whatever the input: top_k or max_answer_len
  // 0, doc_stride > max_seq_len, a max_seq_len that leaves no room for a one-token question and a
  // context. Lets a front end check its options once.
  void check_options(const QuestionAnswerOptions& options) const;
  // Errors (kInvalidInput): empty question or context, invalid UTF-8, a question that leaves no
  // room for the context in max_seq_len, doc_stride > max_seq_len or not less than the context
  // part of a window, top_k or max_answer_len 0.
  Prepared prepare(const std::string& question, const std::string& context,
                   const QuestionAnswerOptions& options = {}) const;
  SpanLogits run(const Prepared& prepared) const;
  std::vector<QuestionAnswer> finish(const Prepared& prepared, const SpanLogits& logits,
                                     const QuestionAnswerOptions& options = {}) const;
  std::vector<QuestionAnswer> operator()(const std::string& question, const std::string& context,
                                         const QuestionAnswerOptions& options = {}) const;
  // Many questions at once: the windows of every input share forward passes; each input gets its
  // answers, or the Error its own prepare or finish threw, about_input(i) (the others still get
  // theirs).
  struct Input {
    std::string question{}, context{};
  };
  std::vector<Result<std::vector<QuestionAnswer>>> run_batched(std::span<const Input> inputs,
                                                               const QuestionAnswerOptions& options = {}) const;

  const ModelConfig& config() const { return config_; }

 private:
  // HF's max_seq_len and doc_stride for these options.
  std::pair<size_t, size_t> lengths(const QuestionAnswerOptions& options) const;
  std::optional<Model> model_;
  Tokenizer tokenizer_;
  ModelConfig config_;
};

}  // namespace roberta
