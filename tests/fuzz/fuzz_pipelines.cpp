// libFuzzer target: the task pipelines' prepare and finish steps (no weights: the logits are made
// from the input bytes) on arbitrary text and options. NER (every aggregation, windows with and
// without a stride, lists of words), QA (windows, spans, the impossible answer), zero-shot (the
// hypothesis template's str.format) and text classification; NER and QA with RoBERTa's tokenizer
// and with a BERT-style WordPiece one. Errors are fine; a crash, a hang, an
// answer outside its text or a non-finite score is a finding.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "roberta/question_answerer.h"
#include "roberta/text_classifier.h"
#include "roberta/token_classifier.h"
#include "roberta/zero_shot_classifier.h"

namespace {

using namespace roberta;

const Tokenizer& tokenizer() {
  static const Tokenizer tok = Tokenizer::from_dir(ROBERTA_SHARED_DIR "/assets/roberta-base-tokenizer");
  return tok;
}

// A BERT-style WordPiece tokenizer ([CLS] A [SEP] B [SEP]), as some RoBERTa checkpoints ship.
const Tokenizer& wordpiece() {
  static const Tokenizer tok = Tokenizer::from_dir(ROBERTA_TEST_DATA "/hf/wordpiece");
  return tok;
}

ModelConfig config(std::vector<std::string> labels) {
  ModelConfig m;
  m.vocab_size = 50265;
  m.hidden_size = 8;
  m.num_hidden_layers = 1;
  m.num_attention_heads = 2;
  m.intermediate_size = 16;
  m.pad_token_id = 1;
  m.max_position_embeddings = 514;
  m.id2label = std::move(labels);
  m.label2id.clear();
  for (size_t i = 0; i < m.id2label.size(); ++i) m.label2id[m.id2label[i]] = static_cast<int64_t>(i);
  return m;
}

// Logits from the input's bytes, cycled: values in [-8, 8).
struct Logits {
  std::span<const uint8_t> bytes;
  size_t at = 0;
  float next() {
    if (bytes.empty()) return 0.0f;
    return (static_cast<float>(bytes[at++ % bytes.size()]) - 128.0f) / 16.0f;
  }
  Matrix matrix(size_t rows, size_t cols) {
    Matrix m(rows, cols);
    for (float& v : m.data) v = next();
    return m;
  }
};

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// A broken invariant: say which, then crash (libFuzzer keeps the input).
#define check(ok)                                                       \
  do {                                                                  \
    if (!(ok)) {                                                        \
      std::fprintf(stderr, "check failed, line %d: %s\n", __LINE__, #ok); \
      __builtin_trap();                                                 \
    }                                                                   \
  } while (false)

void check_score(float s) { check(std::isfinite(s) && s >= 0.0f && s <= 1.0001f); }

void token_classification(const std::string& text, const uint8_t* p, Logits& logits) {
  static const TokenClassifier bpe_ner(tokenizer(), config({"O", "B-PER", "I-PER", "B-LOC", "I-LOC", "MISC"}));
  static const TokenClassifier wordpiece_ner(wordpiece(), config({"O", "B-PER", "I-PER", "B-LOC", "I-LOC", "MISC"}));
  const TokenClassifier& ner = p[3] & 1 ? wordpiece_ner : bpe_ner;
  TokenClassifyOptions o;
  o.aggregation = static_cast<Aggregation>(p[0] % 5);
  if (p[0] & 0x80) o.ignore_labels.clear();
  o.max_length = 3 + p[1] % 40;
  if (p[2] & 1) o.stride = p[2] >> 1;
  const bool words = p[0] & 0x40;
  TokenClassifier::Prepared prepared;
  try {
    prepared = words ? ner.prepare_words(fuzz::split(text, ' '), p[0] & 0x20 ? "" : " ", o) : ner.prepare(text, o);
  } catch (const Error&) {
    return;
  }
  size_t rows = 0;
  for (const Encoding& w : prepared.windows) {
    check(w.size() <= o.max_length);
    rows += w.size();
  }
  const size_t n = code_points(prepared.text);
  int64_t last_end = 0;
  for (const TokenEntity& e : ner.finish(prepared, logits.matrix(rows, 6), o)) {
    check(0 <= e.start && e.start <= e.end && static_cast<size_t>(e.end) <= n);
    check(e.byte_start <= e.byte_end && e.byte_end <= prepared.text.size());
    check(code_points(prepared.text.substr(0, e.byte_start)) == static_cast<size_t>(e.start));
    check(code_points(prepared.text.substr(0, e.byte_end)) == static_cast<size_t>(e.end));
    check_score(e.score);
    check(o.aggregation == Aggregation::kNone ? e.index >= 1 && static_cast<size_t>(e.index) < o.max_length
                                              : e.index == -1);
    check(std::find(o.ignore_labels.begin(), o.ignore_labels.end(), e.entity) == o.ignore_labels.end());
    if (prepared.windows.size() > 1) {  // aggregate_overlapping_entities: no two kept ones overlap
      // (an empty entity, e.g. the space token before "<unk>", overlaps nothing: the next may
      // share its start, and HF lists an empty first entity twice)
      check(e.start >= last_end);
      last_end = e.end;
    }
  }
}

void question_answering(const std::string& text, const uint8_t* p, Logits& logits) {
  static const QuestionAnswerer bpe_qa(tokenizer(), config({"LABEL_0", "LABEL_1"}));
  static const QuestionAnswerer wordpiece_qa(wordpiece(), config({"LABEL_0", "LABEL_1"}));
  const QuestionAnswerer& qa = p[3] & 0x20 ? wordpiece_qa : bpe_qa;
  const size_t cut = text.find('?');
  if (cut == std::string::npos) return;
  const std::string question = text.substr(0, cut + 1), context = text.substr(cut + 1);
  QuestionAnswerOptions o;
  o.top_k = 1 + p[0] % 4;
  o.max_seq_len = 4 + p[1] % 48;
  if (p[2] & 1) o.doc_stride = p[2] >> 2;
  o.max_answer_len = 1 + p[3] % 8;
  o.handle_impossible_answer = p[3] & 0x80;
  o.align_to_words = p[3] & 0x40;
  QuestionAnswerer::Prepared prepared;
  try {
    prepared = qa.prepare(question, context, o);
  } catch (const Error&) {
    return;
  }
  SpanLogits span;
  for (const Encoding& w : prepared.windows) {
    check(w.size() <= *o.max_seq_len);
    for (size_t i = 0; i < w.size(); ++i) span.start.push_back(logits.next()), span.end.push_back(logits.next());
  }
  const std::vector<QuestionAnswer> answers = qa.finish(prepared, span, o);
  check(answers.size() <= o.top_k);
  for (const QuestionAnswer& a : answers) {
    check(a.byte_start <= a.byte_end && a.byte_end <= context.size());
    check(a.answer == context.substr(a.byte_start, a.byte_end - a.byte_start));
    // (the tokenizer's CLS token written in the question, "<s>" or WordPiece's "[CLS]", stays open
    // for answers, as in HF, whose pipeline then gives that token's offsets, in the question, as the
    // answer's: only the answer text is clamped)
    if (question.find(&qa == &wordpiece_qa ? "[CLS]" : "<s>") == std::string::npos)
      check(0 <= a.start && a.start <= a.end && static_cast<size_t>(a.end) <= code_points(context));
    check(std::isfinite(a.score) && a.score >= 0.0f);
  }
}

void zero_shot(const std::string& text, const uint8_t* p, Logits& logits) {
  static const ZeroShotClassifier zs(tokenizer(), config({"contradiction", "neutral", "entailment"}));
  // "template|label,label,...|sequence"
  const size_t a = text.find('|'), b = a == std::string::npos ? a : text.find('|', a + 1);
  if (b == std::string::npos) return;
  ZeroShotOptions o;
  o.hypothesis_template = text.substr(0, a);
  o.candidate_labels = fuzz::split(text.substr(a + 1, b - a - 1), ',');
  o.multi_label = p[0] & 1;
  const std::vector<std::string> sequences{text.substr(b + 1)};
  ZeroShotClassifier::Prepared prepared;
  try {
    prepared = zs.prepare(sequences, o);
  } catch (const Error&) {
    return;
  }
  for (const Encoding& e : prepared.pairs) check(e.size() <= 512);
  for (const ZeroShotResult& r : zs.finish(prepared, logits.matrix(prepared.pairs.size(), 3), o)) {
    check(r.labels.size() == prepared.labels.size() && r.scores.size() == r.labels.size());
    for (size_t i = 0; i < r.scores.size(); ++i) {
      check_score(r.scores[i]);
      if (i) check(r.scores[i] <= r.scores[i - 1]);
    }
  }
}

void text_classification(const std::string& text, const uint8_t* p, Logits& logits) {
  static const TextClassifier tc(tokenizer(), config({"NEG", "NEUTRAL", "POS"}));
  TextClassifyOptions o;
  o.top_k = p[0] % 5 == 4 ? std::nullopt : std::optional<size_t>(p[0] % 5);
  o.function_to_apply = static_cast<ClassificationFunction>(p[1] % 4);
  o.truncation = p[2] & 1;
  const size_t cut = text.find('\t');
  TextInput input{text.substr(0, cut), std::nullopt};
  if (cut != std::string::npos) input.text_pair = text.substr(cut + 1);
  TextClassifier::Prepared prepared;
  try {
    prepared = tc.prepare(std::span<const TextInput>(&input, 1), o);
  } catch (const Error&) {
    return;
  }
  for (const auto& labels : tc.finish(prepared, logits.matrix(1, 3), o)) {
    check(labels.size() <= o.top_k.value_or(3));
    for (size_t i = 0; i < labels.size(); ++i) {
      if (o.function_to_apply == ClassificationFunction::kNone)
        check(std::isfinite(labels[i].score));
      else
        check_score(labels[i].score);
      if (i) check(labels[i].score <= labels[i - 1].score);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5 || size > 4096) return 0;
  const uint8_t* params = data + 1;
  const std::string text(reinterpret_cast<const char*>(data + 5), size - 5);
  Logits logits{std::span<const uint8_t>(data, size)};
  switch (data[0] % 4) {
    case 0: token_classification(text, params, logits); break;
    case 1: question_answering(text, params, logits); break;
    case 2: zero_shot(text, params, logits); break;
    default: text_classification(text, params, logits); break;
  }
  return 0;
}
