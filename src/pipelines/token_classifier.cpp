#include "roberta/token_classifier.h"

#include <algorithm>
#include <cmath>

#include "pipelines/pipeline_util.h"
#include "roberta/error.h"

namespace roberta {

Aggregation parse_aggregation(const std::string& name) {
  if (name == "none") return Aggregation::kNone;
  if (name == "simple") return Aggregation::kSimple;
  if (name == "first") return Aggregation::kFirst;
  if (name == "average") return Aggregation::kAverage;
  if (name == "max") return Aggregation::kMax;
  throw Error("aggregation_strategy \"" + name + "\" is not one of none, simple, first, average, max");
}

TokenClassifier::TokenClassifier(Model model, Tokenizer tokenizer)
    : tokenizer_(std::move(tokenizer)), config_(model.config()) {
  model.require_head(Head::kTokenClassification, "so it cannot classify tokens");
  model_.emplace(std::move(model));
}

TokenClassifier::TokenClassifier(Tokenizer tokenizer, ModelConfig config)
    : tokenizer_(std::move(tokenizer)), config_(std::move(config)) {}

TokenClassifier TokenClassifier::load(const std::filesystem::path& dir, const LoadOptions& options) {
  auto [model, tokenizer] = pipeline::load_model_and_tokenizer(dir, options);
  return TokenClassifier(std::move(model), std::move(tokenizer));
}

namespace {

// Tokens [begin, end) of `full` (an encoding of the text with `lead` special tokens before it and
// `trail` after it: <s> ... </s>, [CLS] ... [SEP]) as a window of its own, with those special tokens.
Encoding window_of(const Encoding& full, size_t begin, size_t end, size_t lead, size_t trail) {
  Encoding w;
  const auto take = [&](auto& dst, const auto& src) {
    dst.assign(src.begin(), src.begin() + static_cast<ptrdiff_t>(lead));
    dst.insert(dst.end(), src.begin() + static_cast<ptrdiff_t>(begin), src.begin() + static_cast<ptrdiff_t>(end));
    dst.insert(dst.end(), src.end() - static_cast<ptrdiff_t>(trail), src.end());
  };
  take(w.ids, full.ids), take(w.type_ids, full.type_ids), take(w.tokens, full.tokens);
  take(w.offsets, full.offsets), take(w.byte_offsets, full.byte_offsets);
  take(w.special_tokens_mask, full.special_tokens_mask), take(w.attention_mask, full.attention_mask);
  take(w.sequence_ids, full.sequence_ids), take(w.word_ids, full.word_ids);
  return w;
}

struct PreEntity {
  std::string word;
  const float* scores;
  int64_t start, end;
  size_t byte_start, byte_end;
  int64_t index;
  bool is_subword;
};

size_t argmax(const float* x, size_t n) { return static_cast<size_t>(std::max_element(x, x + n) - x); }

// HF's group_sub_entities: the label after its first '-' (or whole), mean score, decoded words.
TokenEntity group_sub_entities(const std::vector<TokenEntity>& group, const Tokenizer& tokenizer) {
  TokenEntity g;
  const std::string& first = group.front().entity;
  const size_t dash = first.find('-');
  g.entity = dash == std::string::npos ? first : first.substr(dash + 1);
  double sum = 0;
  std::vector<std::string> words;
  for (const TokenEntity& e : group) {
    sum += e.score;
    words.push_back(e.word);
  }
  g.score = static_cast<float>(sum / static_cast<double>(group.size()));
  g.word = tokenizer.convert_tokens_to_string(words);
  g.start = group.front().start, g.byte_start = group.front().byte_start;
  g.end = group.back().end, g.byte_end = group.back().byte_end;
  return g;
}

// HF's get_tag: ("B", tag) / ("I", tag), and a label without B-/I- counts as I.
std::pair<char, std::string> get_tag(const std::string& label) {
  if (label.rfind("B-", 0) == 0) return {'B', label.substr(2)};
  if (label.rfind("I-", 0) == 0) return {'I', label.substr(2)};
  return {'I', label};
}

std::vector<TokenEntity> group_entities(const std::vector<TokenEntity>& entities, const Tokenizer& tokenizer) {
  std::vector<TokenEntity> groups, current;
  for (const TokenEntity& e : entities) {
    if (current.empty()) {
      current.push_back(e);
      continue;
    }
    const auto [bi, tag] = get_tag(e.entity);
    const auto [last_bi, last_tag] = get_tag(current.back().entity);
    (void)last_bi;
    if (tag == last_tag && bi != 'B') {
      current.push_back(e);
    } else {
      groups.push_back(group_sub_entities(current, tokenizer));
      current = {e};
    }
  }
  if (!current.empty()) groups.push_back(group_sub_entities(current, tokenizer));
  return groups;
}

// transformers' aggregate_words: a word is a token and the subwords after it, scored as `aggregation`
// (first, average or max) says. L labels; id2label names them.
std::vector<TokenEntity> aggregate_words(const std::vector<PreEntity>& pre, size_t L, Aggregation aggregation,
                                         const Tokenizer& tokenizer, const std::vector<std::string>& id2label) {
  std::vector<TokenEntity> entities;
  for (size_t a = 0; a < pre.size();) {
    size_t b = a + 1;
    while (b < pre.size() && pre[b].is_subword) ++b;
    std::vector<std::string> words;
    for (size_t i = a; i < b; ++i) words.push_back(pre[i].word);
    TokenEntity e;
    e.word = tokenizer.convert_tokens_to_string(words);
    size_t k = 0;
    if (aggregation == Aggregation::kFirst) {
      k = argmax(pre[a].scores, L);
      e.score = pre[a].scores[k];
    } else if (aggregation == Aggregation::kMax) {
      size_t best = a;
      for (size_t i = a + 1; i < b; ++i)
        if (*std::max_element(pre[i].scores, pre[i].scores + L) >
            *std::max_element(pre[best].scores, pre[best].scores + L))
          best = i;
      k = argmax(pre[best].scores, L);
      e.score = pre[best].scores[k];
    } else {
      std::vector<float> avg(L);
      for (size_t j = 0; j < L; ++j) {
        double sum = 0;
        for (size_t i = a; i < b; ++i) sum += pre[i].scores[j];
        avg[j] = static_cast<float>(sum / static_cast<double>(b - a));
      }
      k = argmax(avg.data(), L);
      e.score = avg[k];
    }
    e.entity = id2label[k];
    e.start = pre[a].start, e.byte_start = pre[a].byte_start;
    e.end = pre[b - 1].end, e.byte_end = pre[b - 1].byte_end;
    entities.push_back(std::move(e));
    a = b;
  }
  return entities;
}

// transformers' aggregate_overlapping_entities, for windows that overlap: of entities that overlap,
// the longest (then the higher score) is kept. `all` is not empty.
std::vector<TokenEntity> aggregate_overlapping(std::vector<TokenEntity> all) {
  std::stable_sort(all.begin(), all.end(), [](const TokenEntity& a, const TokenEntity& b) { return a.start < b.start; });
  std::vector<TokenEntity> kept;
  TokenEntity previous = all.front();
  for (const TokenEntity& e : all) {
    if (previous.start <= e.start && e.start < previous.end) {
      const int64_t len = e.end - e.start, previous_len = previous.end - previous.start;
      if (len > previous_len || (len == previous_len && e.score > previous.score)) previous = e;
    } else {
      kept.push_back(previous);
      previous = e;
    }
  }
  kept.push_back(previous);
  return kept;
}

}  // namespace

size_t TokenClassifier::max_length() const { return pipeline::truncation_length(config_, tokenizer_); }

size_t TokenClassifier::window_length(const TokenClassifyOptions& options) const {
  // HF truncates at the tokenizer's model_max_length, and cuts windows of it with a stride.
  return options.max_length ? std::min(options.max_length, pipeline::model_max_length(config_)) : max_length();
}

void TokenClassifier::check_options(const TokenClassifyOptions& options) const {
  const size_t max_len = window_length(options);
  const size_t specials = tokenizer_.encode("").size();  // <s> and </s> around any text
  if (max_len <= specials) throw Error("max_length " + std::to_string(max_len) + " leaves no room for a token");
  if (!options.stride) return;
  const size_t stride = *options.stride;
  if (stride >= max_len)
    throw Error("stride " + std::to_string(stride) + " must be less than the window length " + std::to_string(max_len));
  if (stride >= max_len - specials)
    throw Error("stride " + std::to_string(stride) + " must be less than the " + std::to_string(max_len - specials) +
                " text tokens of a window");
}

TokenClassifier::Prepared TokenClassifier::prepare(std::string_view text, const TokenClassifyOptions& options) const {
  pipeline::require_utf8(text, "");
  return windows(std::string(text), tokenizer_.encode(text), options);
}

TokenClassifier::Prepared TokenClassifier::prepare_words(std::span<const std::string> words, std::string_view delimiter,
                                                         const TokenClassifyOptions& options) const {
  pipeline::require_utf8(delimiter, "delimiter");
  for (size_t i = 0; i < words.size(); ++i) pipeline::require_utf8(words[i], "word " + std::to_string(i + 1));
  const auto code_points = [](std::string_view s) {
    return static_cast<int64_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
  };
  // HF's sentence = delimiter.join(words) and word_to_chars_map (each word's start in it)
  std::string text;
  std::vector<std::pair<int64_t, int64_t>> starts;  // code point, byte
  int64_t chars = 0;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) text += delimiter, chars += code_points(delimiter);
    starts.emplace_back(chars, static_cast<int64_t>(text.size()));
    text += words[i], chars += code_points(words[i]);
  }
  Prepared p = windows(std::move(text), tokenizer_.encode_words(words), options);
  // gather_pre_entities moves each token's offsets from its word into the sentence (after the
  // tokenizer trimmed each window, which looks at offsets into the word).
  for (Encoding& w : p.windows)
    for (size_t i = 0; i < w.size(); ++i) {
      if (w.word_ids[i] < 0) continue;
      const auto [c, b] = starts.at(static_cast<size_t>(w.word_ids[i]));
      w.offsets[i].first += c, w.offsets[i].second += c;
      w.byte_offsets[i].first += b, w.byte_offsets[i].second += b;
    }
  return p;
}

TokenClassifier::Prepared TokenClassifier::windows(std::string text, const Encoding& full,
                                                   const TokenClassifyOptions& options) const {
  const size_t max_len = window_length(options);
  // The special tokens around the text (<s> and </s>; none without a post-processor; all of them
  // before an empty text).
  size_t lead = 0;
  while (lead < full.size() && full.sequence_ids[lead] != 0) ++lead;
  size_t trail = 0;
  while (trail < full.size() - lead && full.sequence_ids[full.size() - 1 - trail] != 0) ++trail;
  if (max_len <= lead + trail)
    throw Error("max_length " + std::to_string(max_len) + " leaves no room for a token");
  const size_t budget = max_len - lead - trail;
  Prepared p;
  p.text = std::move(text);
  const size_t n = full.size() - lead - trail;  // the text's tokens
  p.tokens = n;
  if (!options.stride) {
    if (n <= budget) {
      p.windows.push_back(full);
    } else {  // HF: truncation=True at the model's length (tokenizers cuts whole words first, same tokens)
      p.windows.push_back(window_of(full, lead, lead + budget, lead, trail));
      p.cut_at = budget;
    }
    return p;
  }
  const size_t stride = *options.stride;
  if (stride >= max_len)
    throw Error("stride " + std::to_string(stride) + " must be less than the window length " + std::to_string(max_len));
  if (n <= budget) {
    p.windows.push_back(full);
    return p;
  }
  if (stride >= budget)
    throw Error("stride " + std::to_string(stride) + " must be less than the " + std::to_string(budget) +
                " text tokens of a window");
  for (size_t start = 0;; start += budget - stride) {
    const size_t stop = std::min(start + budget, n);
    p.windows.push_back(window_of(full, lead + start, lead + stop, lead, trail));
    if (start > 0) tokenizer_.as_first_token(p.windows.back(), lead);  // as HF trims each window
    if (stop == n) break;
  }
  return p;
}

Matrix TokenClassifier::run(const Prepared& prepared) const {
  const Model& model = pipeline::require_model(model_, "TokenClassifier");
  ForwardOptions fo;
  fo.token_logits = true;
  const size_t total = pipeline::tokens_of(prepared.windows);
  Matrix logits(total, static_cast<size_t>(config_.num_labels()));
  size_t row = 0;
  pipeline::in_passes(prepared.windows, [&](const Batch& batch, size_t) {
    const Outputs out = model.forward(batch, fo);
    std::copy(out.token_logits.data.begin(), out.token_logits.data.end(), logits.row(row));
    row += out.token_logits.rows;
  });
  return logits;
}

std::vector<Result<std::vector<TokenEntity>>> TokenClassifier::run_batched(std::span<const std::string> texts,
                                                                         const TokenClassifyOptions& options) const {
  return pipeline::run_batched<std::vector<TokenEntity>, Prepared>(
      texts.size(), [&](size_t i) { return prepare(texts[i], options); },
      [&](std::span<const Prepared> prepared) {  // rows: the tokens of every window
        Prepared all;
        all.windows = pipeline::all_encodings(prepared, &Prepared::windows);
        return run(all);
      },
      [](const Prepared& p) { return pipeline::tokens_of(p.windows); },
      [&](const Prepared& p, const Matrix& rows) { return finish(p, rows, options); });
}

std::vector<TokenEntity> TokenClassifier::finish(const Prepared& prepared, const Matrix& logits,
                                                 const TokenClassifyOptions& options) const {
  const size_t L = static_cast<size_t>(config_.num_labels());
  const size_t total = pipeline::tokens_of(prepared.windows);
  if (logits.rows != total || logits.cols != L)
    throw Error("TokenClassifier::finish: logits are " + std::to_string(logits.rows) + "x" +
                std::to_string(logits.cols) + ", expected " + std::to_string(total) + "x" + std::to_string(L));
  const pipeline::CodePoints text(prepared.text);
  const std::optional<int32_t> unk = tokenizer_.unk_id();
  const auto ignored = [&](const std::string& label) {
    return std::find(options.ignore_labels.begin(), options.ignore_labels.end(), label) != options.ignore_labels.end();
  };
  std::vector<float> scores(total * L);
  std::vector<TokenEntity> all;
  size_t row = 0;
  for (const Encoding& w : prepared.windows) {
    // gather_pre_entities
    std::vector<PreEntity> pre;
    for (size_t i = 0; i < w.size(); ++i, ++row) {
      float* s = scores.data() + row * L;
      pipeline::softmax(logits.row(row), L, s);
      if (w.special_tokens_mask[i]) continue;
      PreEntity e;
      e.word = tokenizer_.id_to_token(w.ids[i]);
      e.scores = s;
      e.start = w.offsets[i].first, e.end = w.offsets[i].second;
      e.byte_start = static_cast<size_t>(w.byte_offsets[i].first);
      e.byte_end = static_cast<size_t>(w.byte_offsets[i].second);
      e.index = static_cast<int64_t>(i);
      // The BPE model has no continuing_subword_prefix, so HF's fallback heuristic: a subword
      // unless the character before the token or its first character is a space (" " only). A
      // WordPiece model has one ("##"): a subword when the token's string is not as long as its
      // text ("##ing" for "ing").
      e.is_subword = false;
      if (tokenizer_.is_wordpiece()) {
        const auto chars = static_cast<int64_t>(std::count_if(
            e.word.begin(), e.word.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
        e.is_subword = chars != e.end - e.start;
      } else if (e.start > 0) {
        const auto s0 = static_cast<size_t>(e.start);
        const bool space_before = text.at(s0 - 1) == U' ';
        const bool space_first = s0 < text.size() && text.at(s0) == U' ';
        e.is_subword = !space_before && !space_first;
      }
      if (unk && w.ids[i] == *unk) {
        e.word = text.slice(e.start, e.end);
        e.is_subword = false;
      }
      pre.push_back(std::move(e));
    }
    // aggregate
    std::vector<TokenEntity> entities;
    if (options.aggregation == Aggregation::kNone || options.aggregation == Aggregation::kSimple) {
      for (const PreEntity& p : pre) {
        const size_t k = argmax(p.scores, L);
        TokenEntity e;
        e.entity = config_.id2label[k];
        e.score = p.scores[k];
        e.index = p.index;
        e.word = p.word;
        e.start = p.start, e.end = p.end, e.byte_start = p.byte_start, e.byte_end = p.byte_end;
        entities.push_back(std::move(e));
      }
    } else {
      entities = aggregate_words(pre, L, options.aggregation, tokenizer_, config_.id2label);
    }
    if (options.aggregation != Aggregation::kNone) entities = group_entities(entities, tokenizer_);
    for (TokenEntity& e : entities)
      if (!ignored(e.entity)) all.push_back(std::move(e));
  }
  if (prepared.windows.size() > 1 && !all.empty()) all = aggregate_overlapping(std::move(all));
  return all;
}

std::vector<TokenEntity> TokenClassifier::operator()(std::string_view text, const TokenClassifyOptions& options) const {
  const Prepared p = prepare(text, options);
  return finish(p, run(p), options);
}

std::vector<TokenEntity> TokenClassifier::classify_words(std::span<const std::string> words, std::string_view delimiter,
                                                         const TokenClassifyOptions& options) const {
  const Prepared p = prepare_words(words, delimiter, options);
  return finish(p, run(p), options);
}

}  // namespace roberta
