// Late chunking (roberta/late_chunking.h): a document's chunks, windows and stitched token states.
#include "roberta/late_chunking.h"

#include <algorithm>
#include <cstdint>

#include "pipelines/pipeline_util.h"
#include "tokenizer/lowercase.h"
#include "tokenizer/unicode.h"

namespace roberta {

ChunkBy parse_chunk_by(const std::string& name) {
  if (name == "sentences") return ChunkBy::kSentences;
  if (name == "tokens") return ChunkBy::kTokens;
  throw Error("chunk-by \"" + name + "\" is not one of sentences, tokens");
}

namespace {

bool ends_sentence(char32_t c) { return c == '.' || c == '!' || c == '?' || c == U'\u2026'; }
bool closes_sentence(char32_t c) {
  return c == '"' || c == '\'' || c == ')' || c == ']' || c == U'\u201d' || c == U'\u2019';
}

// The piece [begin, end) trimmed of white space, if anything is left.
void add_trimmed(const pipeline::CodePoints& cps, size_t begin, size_t end, std::vector<TextSpan>& out) {
  while (begin < end && unicode::is_whitespace(cps.at(begin))) ++begin;
  while (end > begin && unicode::is_whitespace(cps.at(end - 1))) --end;
  if (begin < end) out.push_back({begin, end});
}

}  // namespace

std::vector<TextSpan> split_sentences(std::string_view text) {
  pipeline::require_utf8(text, "");
  const pipeline::CodePoints cps(text);
  const size_t n = cps.size();
  std::vector<TextSpan> out;
  size_t begin = 0;
  for (size_t i = 0; i < n;) {
    if (ends_sentence(cps.at(i))) {  // a run of terminators, then closing quotes or brackets
      size_t j = i;
      while (j < n && ends_sentence(cps.at(j))) ++j;
      while (j < n && closes_sentence(cps.at(j))) ++j;
      if (j == n || unicode::is_whitespace(cps.at(j))) add_trimmed(cps, begin, j, out), begin = j;
      i = j;
    } else if (cps.at(i) == '\n') {  // a blank line: \n, white space only, \n
      size_t j = i + 1;
      while (j < n && cps.at(j) != '\n' && unicode::is_whitespace(cps.at(j))) ++j;
      if (j < n && cps.at(j) == '\n') add_trimmed(cps, begin, i, out), begin = j;
      i = j;
    } else {
      ++i;
    }
  }
  add_trimmed(cps, begin, n, out);
  return out;
}

namespace {

// The document's tokens (<s> </s> left out) and their code point offsets.
struct DocumentTokens {
  std::vector<int32_t> ids;
  std::vector<Offsets> offsets;
  bool monotone = true;  // starts and ends never decrease (then a span's tokens are found by search)
};

DocumentTokens document_tokens(const Embedder& embedder, std::string_view text, size_t code_points) {
  const Tokenizer& tok = embedder.tokenizer();
  Encoding e;
  if (embedder.config().do_lower_case) {
    const std::string lower = lowercase(text);
    if (pipeline::CodePoints(lower).size() != code_points)
      throw Error("lowercasing the document (the folder's do_lower_case) changes its length, so its chunks' "
                  "positions would not be those of the text");
    e = tok.encode(lower);
  } else {
    e = tok.encode(text);
  }
  DocumentTokens d;
  for (size_t i = 0; i < e.size(); ++i) {
    if (e.special_tokens_mask[i]) continue;
    if (!d.offsets.empty())
      d.monotone &= e.offsets[i].first >= d.offsets.back().first && e.offsets[i].second >= d.offsets.back().second;
    d.ids.push_back(e.ids[i]);
    d.offsets.push_back(e.offsets[i]);
  }
  return d;
}

// The document tokens [first, last) whose offsets overlap `span` lie in (empty-span tokens among
// them are left out of the mean).
std::pair<size_t, size_t> tokens_of(const DocumentTokens& d, TextSpan span) {
  const auto cs = static_cast<int64_t>(span.start), ce = static_cast<int64_t>(span.end);
  const auto overlaps = [&](size_t t) { return d.offsets[t].first < ce && d.offsets[t].second > cs; };
  size_t first = 0, last = d.offsets.size();
  if (d.monotone) {
    first = static_cast<size_t>(std::partition_point(d.offsets.begin(), d.offsets.end(),
                                                     [&](const Offsets& o) { return o.second <= cs; }) -
                                d.offsets.begin());
    last = static_cast<size_t>(std::partition_point(d.offsets.begin() + static_cast<ptrdiff_t>(first),
                                                    d.offsets.end(), [&](const Offsets& o) { return o.first < ce; }) -
                               d.offsets.begin());
  }
  while (first < last && !overlaps(first)) ++first;
  while (last > first && !overlaps(last - 1)) --last;
  return {first, last};
}

size_t pooled_count(const DocumentTokens& d, std::pair<size_t, size_t> range) {
  size_t n = 0;
  for (size_t t = range.first; t < range.second; ++t) n += d.offsets[t].first < d.offsets[t].second;
  return n;
}

// Consecutive sentences packed into chunks of at most `budget` tokens.
std::vector<TextSpan> pack_sentences(const DocumentTokens& d, const std::vector<TextSpan>& sentences, size_t budget) {
  std::vector<TextSpan> out;
  for (size_t i = 0; i < sentences.size();) {
    TextSpan chunk = sentences[i++];
    while (i < sentences.size()) {
      const TextSpan wider{chunk.start, sentences[i].end};
      if (pooled_count(d, tokens_of(d, wider)) > budget) break;
      chunk = wider, ++i;
    }
    out.push_back(chunk);
  }
  return out;
}

// Groups of `n` document tokens, each as the span its non-empty tokens cover.
std::vector<TextSpan> token_groups(const DocumentTokens& d, size_t n) {
  std::vector<TextSpan> out;
  for (size_t g = 0; g < d.offsets.size(); g += n) {
    std::optional<TextSpan> span;
    for (size_t t = g; t < std::min(g + n, d.offsets.size()); ++t) {
      const auto [a, b] = d.offsets[t];
      if (a >= b) continue;
      if (!span) span = TextSpan{static_cast<size_t>(a), static_cast<size_t>(b)};
      span->start = std::min(span->start, static_cast<size_t>(a));
      span->end = std::max(span->end, static_cast<size_t>(b));
    }
    if (span) out.push_back(*span);
  }
  return out;
}

std::vector<TextSpan> chunk_spans(std::string_view text, size_t code_points, const DocumentTokens& d,
                                  const LateChunkingOptions& options, const std::vector<TextSpan>* given) {
  if (given) {
    for (size_t i = 0; i < given->size(); ++i) {
      const TextSpan s = (*given)[i];
      if (s.start >= s.end || s.end > code_points)
        throw Error("spans[" + std::to_string(i) + "] [" + std::to_string(s.start) + ", " + std::to_string(s.end) +
                    ") is not a non-empty range of the document's " + std::to_string(code_points) + " characters");
    }
    return *given;
  }
  if (options.chunk_by == ChunkBy::kTokens) {
    if (options.chunk_tokens == 0) throw Error("chunking by tokens needs a number of tokens per chunk (chunk_tokens)");
    return token_groups(d, options.chunk_tokens);
  }
  const std::vector<TextSpan> sentences = split_sentences(text);
  return options.chunk_tokens ? pack_sentences(d, sentences, options.chunk_tokens) : sentences;
}

}  // namespace

LateChunks prepare_late_chunks(const Embedder& embedder, std::string_view text, const LateChunkingOptions& options,
                               const std::vector<TextSpan>* spans) {
  if (embedder.config().splade)
    throw Error(embedder.model().dir().string() +
                    ": the folder is a sentence-transformers SparseEncoder: its embeddings are sparse, not late chunks",
                ErrorKind::kInvalidModel);
  if (options.text.pooling && *options.text.pooling != Pooling::kMean)
    throw Error(std::string("late chunking pools each chunk by mean, not by ") + pooling_name(*options.text.pooling));
  EmbedOptions mean = options.text;
  mean.pooling = Pooling::kMean;
  embedder.dimension(mean);  // throws where the folder's Dense modules take several modes' vectors
  pipeline::require_utf8(text, "");
  const size_t code_points = pipeline::CodePoints(text).size();
  const DocumentTokens doc = document_tokens(embedder, text, code_points);

  LateChunks out;
  out.embedder_ = &embedder;
  out.text_ = mean;
  out.tokens_ = doc.ids.size();
  out.spans_ = chunk_spans(text, code_points, doc, options, spans);
  for (size_t i = 0; i < out.spans_.size(); ++i) {
    const auto [first, last] = tokens_of(doc, out.spans_[i]);
    if (pooled_count(doc, {first, last}) == 0)
      throw Error("spans[" + std::to_string(i) + "] [" + std::to_string(out.spans_[i].start) + ", " +
                  std::to_string(out.spans_[i].end) + ") holds no token of the document");
    out.chunks_.push_back({first, last});
  }
  out.pooled_.resize(doc.ids.size());
  for (size_t t = 0; t < doc.ids.size(); ++t) out.pooled_[t] = doc.offsets[t].first < doc.offsets[t].second;

  // Every window: <s>, the prompt's tokens, document tokens [s, e), </s>.
  const size_t max_len = embedder.max_tokens(options.text);
  EmbedOptions prefix_options = options.text;  // (the prompt checked against the window below)
  prefix_options.truncate = false;
  prefix_options.max_length = SIZE_MAX;  // capped at the model's positions
  PreparedText prefix = embedder.prepare_ids({}, prefix_options);
  prefix.ids.pop_back();
  out.prefix_ = prefix.ids.size();
  if (max_len < out.prefix_ + 2)
    throw Error("windows of " + std::to_string(max_len) + " tokens leave no room for the document after <s>" +
                (out.prefix_ > 1 ? ", the prompt's " + std::to_string(out.prefix_ - 1) + " tokens" : std::string()) +
                " and </s>");
  const size_t width = max_len - out.prefix_ - 1;
  const size_t overlap = options.overlap.value_or(width / 4);
  if (overlap >= width)
    throw Error("an overlap of " + std::to_string(overlap) + " tokens is not less than the " + std::to_string(width) +
                " document tokens a window holds");
  // Without chunks (an empty document, or no span given) nothing needs to run.
  const size_t T = out.chunks_.empty() ? 0 : doc.ids.size();
  for (size_t s = 0; T > 0; s += width - overlap) {
    const size_t e = std::min(s + width, T);
    PreparedText w;
    w.ids = prefix.ids;
    w.ids.insert(w.ids.end(), doc.ids.begin() + static_cast<ptrdiff_t>(s), doc.ids.begin() + static_cast<ptrdiff_t>(e));
    w.ids.push_back(embedder.tokenizer().eos_id());
    out.windows_.push_back(std::move(w));
    out.window_start_.push_back(s);
    if (e == T) break;
  }
  // Token t's state comes from the window where min(tokens before it, tokens after it) is largest,
  // the earlier window on a tie. Each window's share is a run of consecutive tokens.
  const size_t K = out.windows_.size();
  out.own_first_.assign(K, 0);
  out.own_last_.assign(K, 0);
  for (size_t t = 0, k0 = 0; t < T; ++t) {
    while (out.window_start_[k0] + width <= t) ++k0;  // the first window that holds t
    size_t best = k0, best_context = 0;
    for (size_t k = k0; k < K && out.window_start_[k] <= t; ++k) {
      const size_t s = out.window_start_[k], e = std::min(s + width, T);
      const size_t context = std::min(t - s, e - 1 - t);
      if (k == k0 || context > best_context) best = k, best_context = context;
    }
    if (out.own_last_[best] == 0) out.own_first_[best] = t;
    out.own_last_[best] = t + 1;
  }
  out.added_.assign(K, 0);
  out.sums_.assign(out.chunks_.size(), std::vector<double>(static_cast<size_t>(embedder.model().config().hidden_size)));
  return out;
}

void LateChunks::add_window(size_t k, const Matrix& states) {
  if (k >= windows_.size() || states.rows != windows_[k].ids.size() || added_[k])
    throw Error("late chunking: window " + std::to_string(k) + " given twice, or with the wrong number of states");
  added_[k] = 1;
  const size_t H = states.cols;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const size_t first = std::max(chunks_[c].first, own_first_[k]), last = std::min(chunks_[c].last, own_last_[k]);
    std::vector<double>& sum = sums_[c];
    for (size_t t = first; t < last; ++t) {
      if (!pooled_[t]) continue;
      const float* row = states.row(prefix_ + t - window_start_[k]);
      for (size_t h = 0; h < H; ++h) sum[h] += row[h];
    }
  }
}

ChunkedText LateChunks::finish() const {
  if (std::count(added_.begin(), added_.end(), 0) != 0)
    throw Error("late chunking: finish() before every window's states were added");
  ChunkedText out;
  out.spans = spans_;
  out.tokens = tokens_;
  out.windows = windows_.size();
  out.embeddings = Matrix(chunks_.size(), embedder_->dimension(text_));
  for (size_t c = 0; c < chunks_.size(); ++c) {
    size_t n = 0;
    for (size_t t = chunks_[c].first; t < chunks_[c].last; ++t) n += pooled_[t];
    std::vector<float> v(sums_[c].size());
    for (size_t h = 0; h < v.size(); ++h) v[h] = static_cast<float>(sums_[c][h] / static_cast<double>(n));
    v = embedder_->after_pooling(std::move(v), text_);
    std::copy(v.begin(), v.end(), out.embeddings.row(c));
  }
  return out;
}

std::vector<ChunkedText> late_chunks(const Embedder& embedder, std::span<const std::string> texts,
                                     const LateChunkingOptions& options,
                                     std::span<const std::optional<std::vector<TextSpan>>> spans) {
  if (!spans.empty() && spans.size() != texts.size())
    throw Error(std::to_string(spans.size()) + " lists of spans for " + std::to_string(texts.size()) + " texts");
  std::vector<LateChunks> docs;
  struct Window {
    size_t doc, k;
  };
  std::vector<Window> windows;
  for (size_t i = 0; i < texts.size(); ++i) {
    try {
      const std::vector<TextSpan>* given = spans.empty() || !spans[i] ? nullptr : &*spans[i];
      docs.push_back(prepare_late_chunks(embedder, texts[i], options, given));
    } catch (const Error& e) {
      throw e.about_input(i);
    }
    for (size_t k = 0; k < docs.back().windows().size(); ++k) windows.push_back({i, k});
  }
  const size_t batch = std::max<size_t>(1, options.text.batch_size);
  for (size_t b = 0; b < windows.size(); b += batch) {
    std::vector<PreparedText> pass;
    for (size_t j = b; j < std::min(b + batch, windows.size()); ++j)
      pass.push_back(docs[windows[j].doc].windows()[windows[j].k]);
    const std::vector<Matrix> states = embedder.run_tokens(pass);
    for (size_t j = 0; j < states.size(); ++j) docs[windows[b + j].doc].add_window(windows[b + j].k, states[j]);
  }
  std::vector<ChunkedText> out;
  for (const LateChunks& d : docs) out.push_back(d.finish());
  return out;
}

}  // namespace roberta
