#include "roberta/question_answerer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tokenizer/lowercase.h"
#include "pipelines/pipeline_util.h"
#include "roberta/error.h"

namespace roberta {

QuestionAnswerer::QuestionAnswerer(Model model, Tokenizer tokenizer)
    : tokenizer_(std::move(tokenizer)), config_(model.config()) {
  model.require_head(Head::kQuestionAnswering, "so it cannot answer questions");
  model_.emplace(std::move(model));
}

QuestionAnswerer::QuestionAnswerer(Tokenizer tokenizer, ModelConfig config)
    : tokenizer_(std::move(tokenizer)), config_(std::move(config)) {}

QuestionAnswerer QuestionAnswerer::load(const std::filesystem::path& dir, const LoadOptions& options) {
  auto [model, tokenizer] = pipeline::load_model_and_tokenizer(dir, options);
  return QuestionAnswerer(std::move(model), std::move(tokenizer));
}

std::pair<size_t, size_t> QuestionAnswerer::lengths(const QuestionAnswerOptions& options) const {
  // HF's default: min(tokenizer.model_max_length, 384).
  const size_t max_seq_len =
      options.max_seq_len.value_or(std::min<size_t>(pipeline::truncation_length(config_, tokenizer_), 384));
  return {max_seq_len, options.doc_stride.value_or(std::min<size_t>(max_seq_len / 2, 128))};
}

void QuestionAnswerer::check_options(const QuestionAnswerOptions& options) const {
  if (options.top_k < 1) throw Error("top_k must be at least 1");
  if (options.max_answer_len < 1) throw Error("max_answer_len must be at least 1");
  const auto [max_seq_len, doc_stride] = lengths(options);
  if (doc_stride > max_seq_len)
    throw Error("doc_stride (" + std::to_string(doc_stride) + ") is larger than max_seq_len (" +
                std::to_string(max_seq_len) + ")");
  const size_t specials = tokenizer_.num_special_tokens_to_add(true);
  if (max_seq_len <= specials) throw Error("max_seq_len " + std::to_string(max_seq_len) + " leaves no room for text");
  if (max_seq_len - specials < 2)
    throw Error("max_seq_len " + std::to_string(max_seq_len) +
                " leaves no room for a context even after a one-token question");
}

QuestionAnswerer::Prepared QuestionAnswerer::prepare(const std::string& question, const std::string& context,
                                                     const QuestionAnswerOptions& options) const {
  if (question.empty()) throw Error("the question is empty");
  if (context.empty()) throw Error("the context is empty");
  pipeline::require_utf8(question, "question");
  pipeline::require_utf8(context, "context");
  check_options(options);
  const size_t model_max = pipeline::model_max_length(config_);
  const std::pair<size_t, size_t> resolved = lengths(options);  // (plain names: the lambda below captures them)
  const size_t max_seq_len = resolved.first, doc_stride = resolved.second;
  const Encoding full = tokenizer_.encode_pair(question, context);
  // <s> Q </s> </s> C </s> (BERT's layout: [CLS] Q [SEP] C [SEP])
  size_t q_len = 0, c_len = 0, c_begin = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    if (full.sequence_ids[i] == 0) ++q_len;
    if (full.sequence_ids[i] == 1) {
      if (c_len == 0) c_begin = i;
      ++c_len;
    }
  }
  if (c_len == 0) c_begin = full.size() - 1;  // where the context would start: before the last special token
  Prepared p;
  p.question = question;
  p.context = context;
  const size_t budget = max_seq_len - tokenizer_.num_special_tokens_to_add(true);
  // A max_seq_len above the model's is only an error when a window would need it (transformers
  // tokenizes a short example whole, whatever max_seq_len says).
  const auto too_long = [&](size_t tokens) {
    return Error("max_seq_len " + std::to_string(max_seq_len) + " is more than the model's " +
                 std::to_string(model_max) + ", and the question and context take " + std::to_string(tokens) +
                 " tokens");
  };
  if (q_len + c_len <= budget) {
    if (full.size() > model_max) throw too_long(full.size());
    p.windows.push_back(full);
    return p;
  }
  if (max_seq_len > model_max) throw too_long(full.size());
  const size_t to_remove = q_len + c_len - budget;
  if (c_len <= to_remove)
    throw Error("the question has " + std::to_string(q_len) + " tokens: with max_seq_len " +
                std::to_string(max_seq_len) + " no room is left for the context");
  const size_t window = c_len - to_remove;  // context tokens per window (= budget - q_len)
  if (doc_stride >= window)
    throw Error("doc_stride " + std::to_string(doc_stride) + " must be less than the " + std::to_string(window) +
                " context tokens of a window (max_seq_len " + std::to_string(max_seq_len) + " minus the question)");
  for (size_t start = 0;; start += window - doc_stride) {
    const size_t stop = std::min(start + window, c_len);
    Encoding w;
    w.n_sequences = 2;
    const auto take = [&](auto& dst, const auto& src) {
      dst.assign(src.begin(), src.begin() + static_cast<ptrdiff_t>(c_begin));
      dst.insert(dst.end(), src.begin() + static_cast<ptrdiff_t>(c_begin + start),
                 src.begin() + static_cast<ptrdiff_t>(c_begin + stop));
      dst.push_back(src.back());
    };
    take(w.ids, full.ids), take(w.type_ids, full.type_ids), take(w.tokens, full.tokens);
    take(w.offsets, full.offsets), take(w.byte_offsets, full.byte_offsets);
    take(w.special_tokens_mask, full.special_tokens_mask), take(w.attention_mask, full.attention_mask);
    take(w.sequence_ids, full.sequence_ids), take(w.word_ids, full.word_ids);
    if (start > 0) tokenizer_.as_first_token(w, c_begin);  // as HF trims each window's context
    p.windows.push_back(std::move(w));
    if (stop == c_len) break;
  }
  return p;
}

SpanLogits QuestionAnswerer::run(const Prepared& prepared) const {
  const Model& model = pipeline::require_model(model_, "QuestionAnswerer");
  ForwardOptions fo;
  fo.span_logits = true;
  SpanLogits logits;
  pipeline::in_passes(prepared.windows, [&](const Batch& batch, size_t) {
    const Outputs out = model.forward(batch, fo);
    logits.start.insert(logits.start.end(), out.start_logits.begin(), out.start_logits.end());
    logits.end.insert(logits.end.end(), out.end_logits.begin(), out.end_logits.end());
  });
  return logits;
}

std::vector<Result<std::vector<QuestionAnswer>>> QuestionAnswerer::run_batched(
    std::span<const Input> inputs, const QuestionAnswerOptions& options) const {
  return pipeline::run_batched<std::vector<QuestionAnswer>, Prepared>(
      inputs.size(), [&](size_t i) { return prepare(inputs[i].question, inputs[i].context, options); },
      [&](std::span<const Prepared> prepared) {  // rows: (start, end) of every token of every window
        Prepared all;
        all.windows = pipeline::all_encodings(prepared, &Prepared::windows);
        const SpanLogits logits = run(all);
        Matrix rows(logits.start.size(), 2);
        for (size_t t = 0; t < rows.rows; ++t) rows.row(t)[0] = logits.start[t], rows.row(t)[1] = logits.end[t];
        return rows;
      },
      [](const Prepared& p) { return pipeline::tokens_of(p.windows); },
      [&](const Prepared& p, const Matrix& rows) {
        SpanLogits logits;
        for (size_t t = 0; t < rows.rows; ++t) logits.start.push_back(rows.row(t)[0]), logits.end.push_back(rows.row(t)[1]);
        return finish(p, logits, options);
      });
}

namespace {

struct Candidate {
  size_t s, e;
  float score;
};

// Encoding.word_to_chars(word, 1) within one window: the span of the context tokens of that word.
std::optional<std::pair<int64_t, int64_t>> word_to_chars(const Encoding& w, int32_t word) {
  std::optional<size_t> first, last;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w.sequence_ids[i] != 1) continue;
    if (w.word_ids[i] > word) break;
    if (w.word_ids[i] == word) {
      if (!first) first = i;
      last = i;
    }
  }
  if (!first) return std::nullopt;
  return std::make_pair(w.offsets[*first].first, w.offsets[*last].second);
}

}  // namespace

std::vector<QuestionAnswer> QuestionAnswerer::finish(const Prepared& prepared, const SpanLogits& logits,
                                                     const QuestionAnswerOptions& options) const {
  const size_t total = pipeline::tokens_of(prepared.windows);
  if (logits.start.size() != total || logits.end.size() != total)
    throw Error("QuestionAnswerer::finish: " + std::to_string(logits.start.size()) + " start and " +
                std::to_string(logits.end.size()) + " end logits for " + std::to_string(total) + " tokens");
  if (options.top_k < 1) throw Error("top_k must be at least 1");
  const pipeline::CodePoints context(prepared.context);
  const int32_t cls = tokenizer_.bos_id();
  const size_t pre_topk = options.align_to_words ? options.top_k * 2 + 10 : options.top_k;
  double min_null_score = 1000000;
  struct Answer {
    double score;
    int64_t start, end;
    std::string text, lower;
  };
  std::vector<Answer> answers;
  size_t offset = 0;
  for (const Encoding& w : prepared.windows) {
    const size_t T = w.size();
    // select_starts_ends: p_mask is 0 for the context and for every <s> (HF keeps cls_token_id
    // tokens open for impossible answers, also an <s> written in the question).
    std::vector<uint8_t> desired(T);
    for (size_t i = 0; i < T; ++i) desired[i] = w.sequence_ids[i] == 1 || w.ids[i] == cls;
    std::vector<float> start(T), end(T);
    for (size_t i = 0; i < T; ++i) {
      start[i] = desired[i] ? logits.start[offset + i] : -10000.0f;
      end[i] = desired[i] ? logits.end[offset + i] : -10000.0f;
    }
    pipeline::softmax(start.data(), T, start.data());
    pipeline::softmax(end.data(), T, end.data());
    if (options.handle_impossible_answer)
      min_null_score = std::min(min_null_score, static_cast<double>(start[0] * end[0]));
    start[0] = end[0] = 0.0f;
    // decode_spans: spans with s <= e < s + max_answer_len, best first. Spans of probability 0
    // are left out (HF may list some when a window has fewer than pre_topk spans: numpy's
    // partition order decides which).
    std::vector<Candidate> cands;
    for (size_t s = 0; s < T; ++s)
      for (size_t e = s; e < std::min(T, s + options.max_answer_len); ++e) {
        const float score = start[s] * end[e];
        if (score > 0) cands.push_back({s, e, score});
      }
    const size_t k = std::min(pre_topk, cands.size());
    std::partial_sort(cands.begin(), cands.begin() + static_cast<ptrdiff_t>(k), cands.end(),
                      [](const Candidate& a, const Candidate& b) {
                        return a.score != b.score ? a.score > b.score : (a.s != b.s ? a.s < b.s : a.e < b.e);
                      });
    cands.resize(k);
    for (const Candidate& c : cands) {
      // np.isin(starts, undesired_tokens.nonzero()) also accepts index 0 (the row indices of the
      // 2-D mask): kept for fidelity, though such spans have probability 0 and are gone already.
      if (!(desired[c.s] || c.s == 0) || !(desired[c.e] || c.e == 0)) continue;
      int64_t start_index, end_index;
      bool aligned = false;
      if (options.align_to_words && w.word_ids[c.s] >= 0 && w.word_ids[c.e] >= 0) {
        const auto a = word_to_chars(w, w.word_ids[c.s]);
        const auto b = word_to_chars(w, w.word_ids[c.e]);
        if (a && b) {
          start_index = a->first;
          end_index = b->second;
          aligned = true;
        }
      }
      if (!aligned) {  // HF's fallback (and align_to_words=false): the tokens' own offsets
        start_index = w.offsets[c.s].first;
        end_index = w.offsets[c.e].second;
      }
      std::string text = context.slice(start_index, end_index);
      std::string lower = roberta::lowercase(text);
      auto same = std::find_if(answers.begin(), answers.end(), [&](const Answer& x) { return x.lower == lower; });
      if (same != answers.end())
        same->score += static_cast<double>(c.score);
      else
        answers.push_back({static_cast<double>(c.score), start_index, end_index, std::move(text), std::move(lower)});
    }
    offset += T;
  }
  if (options.handle_impossible_answer) answers.push_back({min_null_score, 0, 0, "", ""});
  std::stable_sort(answers.begin(), answers.end(),
                   [](const Answer& a, const Answer& b) { return pipeline::higher_score(a.score, b.score); });
  if (answers.size() > options.top_k) answers.resize(options.top_k);
  std::vector<QuestionAnswer> out;
  for (Answer& a : answers) {
    QuestionAnswer q;
    q.score = static_cast<float>(a.score);
    q.start = a.start;
    q.end = a.end;
    q.byte_start = context.byte(a.start);
    q.byte_end = std::max(q.byte_start, context.byte(a.end));
    q.answer = std::move(a.text);
    out.push_back(std::move(q));
  }
  return out;
}

std::vector<QuestionAnswer> QuestionAnswerer::operator()(const std::string& question, const std::string& context,
                                                         const QuestionAnswerOptions& options) const {
  const Prepared p = prepare(question, context, options);
  return finish(p, run(p), options);
}

}  // namespace roberta
