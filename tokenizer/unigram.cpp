// HF's Unigram model, with SentencePiece's normalizers and the Metaspace pre-tokenizer.
#include "unigram.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>

#include "roberta/error.h"
#include "unicode.h"

namespace roberta {

namespace {

size_t utf8_length(char lead) {
  const auto c = static_cast<unsigned char>(lead);
  return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

}  // namespace

void UnigramModel::finish() {
  vocab.clear();
  vocab.reserve(pieces.size());
  min_score_ = std::numeric_limits<double>::infinity();
  for (size_t id = 0; id < pieces.size(); ++id) {
    vocab[pieces[id]] = static_cast<int32_t>(id);  // the last of a repeated piece, as HF's map keeps it
    min_score_ = std::min(min_score_, scores[id]);
  }
  // The trie, built from the pieces in byte order: node ids in creation order, then each node's
  // children (created in label order) gathered.
  std::vector<size_t> order(pieces.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pieces[a] < pieces[b]; });
  struct Edge {
    uint32_t parent, child;
    uint8_t label;
  };
  std::vector<Edge> edges;
  std::vector<uint32_t> path{0};  // the nodes of the previous piece's bytes
  std::string_view previous;
  leaf_id_.assign(1, -1);
  for (size_t k : order) {
    const std::string_view piece = pieces[k];
    if (piece.empty()) continue;  // (HF's trie never yields an empty piece)
    size_t common = 0;
    while (common < piece.size() && common < previous.size() && piece[common] == previous[common]) ++common;
    path.resize(common + 1);
    for (size_t i = common; i < piece.size(); ++i) {
      const auto node = static_cast<uint32_t>(leaf_id_.size());
      leaf_id_.push_back(-1);
      edges.push_back({path.back(), node, static_cast<uint8_t>(piece[i])});
      path.push_back(node);
    }
    leaf_id_[path.back()] = vocab.find(piece)->second;
    previous = piece;
  }
  first_.assign(leaf_id_.size() + 1, 0);
  for (const Edge& e : edges) ++first_[e.parent + 1];
  std::partial_sum(first_.begin(), first_.end(), first_.begin());
  labels_.assign(edges.size(), 0);
  targets_.assign(edges.size(), 0);
  std::vector<uint32_t> fill(first_.begin(), first_.end() - 1);
  for (const Edge& e : edges) {
    labels_[fill[e.parent]] = e.label;
    targets_[fill[e.parent]++] = e.child;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    const auto it = vocab.find(std::string_view(name));
    byte_ids_[static_cast<size_t>(b)] = it == vocab.end() ? -1 : it->second;
  }
}

void UnigramModel::normalize(std::string_view text, size_t begin, size_t end, NormalizedText& out) const {
  out.assign(text, begin, end);
  thread_local std::vector<std::pair<size_t, size_t>> matches;
  for (const SpmNormalizerStep& step : normalizer) {
    switch (step.kind) {
      case SpmNormalizerStep::kPrecompiled:
        step.precompiled->normalize(out, begin);
        break;
      case SpmNormalizerStep::kReplace: {
        matches.clear();
        const std::string_view s = out.text, p = step.pattern;
        if (p.empty()) break;
        if (step.min_repeat == 0) {
          for (size_t at = s.find(p); at != std::string_view::npos; at = s.find(p, at + p.size()))
            matches.emplace_back(at, at + p.size());
        } else {  // p repeated at least min_repeat times, as long as it goes
          for (size_t at = s.find(p); at != std::string_view::npos;) {
            size_t end_run = at, count = 0;
            while (s.substr(end_run, p.size()) == p) end_run += p.size(), ++count;
            if (count >= step.min_repeat) matches.emplace_back(at, end_run);
            at = s.find(p, end_run);
          }
        }
        replace_matches(out, matches, step.content);
        break;
      }
      case SpmNormalizerStep::kStrip: {
        const std::string_view s = out.text;
        size_t b = 0, e = s.size();
        while (step.left && b < e) {
          size_t i = b;
          if (!unicode::is_whitespace(unicode::next_code_point(s, i))) break;
          b = i;
        }
        while (step.right && e > b) {
          size_t q = e - 1;
          while (q > b && unicode::is_continuation_byte(s[q])) --q;
          size_t i = q;
          if (!unicode::is_whitespace(unicode::next_code_point(s, i))) break;
          e = q;
        }
        out.text = out.text.substr(b, e - b);
        out.source = std::vector<std::pair<size_t, size_t>>(out.source.begin() + static_cast<ptrdiff_t>(b),
                                                            out.source.begin() + static_cast<ptrdiff_t>(e));
        break;
      }
      case SpmNormalizerStep::kPrepend:
        prepend(out, step.content);
        break;
    }
  }
}

void UnigramModel::tokenize_normalized(const NormalizedText& n, size_t from, size_t to,
                                       std::vector<UnigramToken>& out) const {
  thread_local NormalizedText pre;
  // One split (a word of WhitespaceSplit, or all of n.text[from, to)) through Metaspace.
  const auto metaspace = [&](size_t b, size_t e) {
    pre.text.clear();
    pre.source.clear();
    for (size_t i = b; i < e; ++i) {
      if (n.text[i] == ' ') {
        pre.text += replacement;
        pre.source.insert(pre.source.end(), replacement.size(), n.source[i]);
      } else {
        pre.text += n.text[i];
        pre.source.push_back(n.source[i]);
      }
    }
    if (pre.text.empty()) return;
    const bool starts = pre.text.starts_with(replacement);
    if (!starts && (prepend_scheme == Prepend::kAlways ||
                    (prepend_scheme == Prepend::kFirst && pre.source[0].first == 0)))
      prepend(pre, replacement);
    if (!split) {
      encode_word(pre.text, pre.source, 0, out);
      return;
    }
    // HF's split at the replacement, MergedWithNext: a word starts at each one.
    const std::string_view t = pre.text;
    size_t word = 0;
    for (size_t at = t.find(replacement, 1); at != std::string_view::npos; at = t.find(replacement, at + 1)) {
      encode_word(t.substr(word, at - word), pre.source, word, out);
      word = at;
    }
    encode_word(t.substr(word), pre.source, word, out);
  };
  if (!whitespace_split) {
    metaspace(from, to);
    return;
  }
  const std::string_view s = n.text;
  size_t word = from;
  for (size_t i = from; i < to;) {
    const size_t at = i;
    if (unicode::is_whitespace(unicode::next_code_point(s, i))) {
      if (at > word) metaspace(word, at);
      word = i;
    }
  }
  if (to > word) metaspace(word, to);
}

void UnigramModel::encode_word(std::string_view word, const std::vector<std::pair<size_t, size_t>>& source,
                               size_t at, std::vector<UnigramToken>& out) const {
  if (word.empty()) return;
  struct Best {
    double score = 0;
    int32_t start = -1;
    int32_t id = 0;
  };
  thread_local std::vector<Best> best;
  const size_t size = word.size();
  best.assign(size + 1, Best{});
  const double unk_score = min_score_ - 10.0;  // HF's K_UNK_PENALTY
  const auto offer = [&](size_t target, size_t start, double score, int32_t id) {
    Best& b = best[target];
    if (b.start < 0 || score > b.score) b = {score, static_cast<int32_t>(start), id};
  };
  for (size_t pos = 0; pos < size;) {
    const double till = best[pos].score;
    const size_t mblen = utf8_length(word[pos]);
    bool single = false;
    uint32_t node = 0;
    for (size_t j = pos; j < size; ++j) {
      const auto c = static_cast<uint8_t>(word[j]);
      const uint32_t lo = first_[node], hi = first_[node + 1];
      const uint8_t* found = std::lower_bound(labels_.data() + lo, labels_.data() + hi, c);
      if (found == labels_.data() + hi || *found != c) break;
      node = targets_[static_cast<size_t>(found - labels_.data())];
      if (const int32_t id = leaf_id_[node]; id >= 0) {
        offer(j + 1, pos, scores[static_cast<size_t>(id)] + till, id);
        if (j + 1 - pos == mblen) single = true;
      }
    }
    if (!single) {
      // The unknown token where it would be the best path to the character's end (HF raises
      // MissingUnkId there only: a longer piece may already end there).
      const double score = unk_score + till;
      const Best& target = best[pos + mblen];
      if (!unk_id && (target.start < 0 || score > target.score)) {
        size_t i = pos;
        char cp[16];
        std::snprintf(cp, sizeof cp, "U+%04X", static_cast<unsigned>(unicode::next_code_point(word, i)));
        throw Error(std::string("the tokenizer cannot encode the character ") + cp +
                    ": it is not in the Unigram vocabulary and the model has no unknown token (unk_id is null)");
      }
      if (unk_id) offer(pos + mblen, pos, score, *unk_id);
    }
    pos += mblen;
  }
  // The best path, back to front; runs of the unknown token fused into one.
  thread_local std::vector<std::pair<size_t, size_t>> ranges;
  ranges.clear();
  bool in_unknown = false;
  for (size_t end = size; end > 0;) {
    const Best& b = best[end];
    const auto start = static_cast<size_t>(b.start);
    if (unk_id && b.id == *unk_id) {
      if (in_unknown)
        ranges.back().first = start;
      else
        ranges.emplace_back(start, end);
      in_unknown = true;
    } else {
      ranges.emplace_back(start, end);
      in_unknown = false;
    }
    end = start;
  }
  bool first = true;
  for (auto r = ranges.rbegin(); r != ranges.rend(); ++r) {
    const std::string_view piece = word.substr(r->first, r->second - r->first);
    const size_t ob = source[at + r->first].first, oe = source[at + r->second - 1].second;
    if (const auto it = vocab.find(piece); it != vocab.end()) {
      out.push_back({it->second, ob, oe, first, {}});
    } else if (byte_fallback && std::all_of(piece.begin(), piece.end(), [&](char c) {
                 return byte_ids_[static_cast<uint8_t>(c)] >= 0;
               })) {
      for (const char c : piece) {
        out.push_back({byte_ids_[static_cast<uint8_t>(c)], ob, oe, first, {}});
        first = false;
      }
    } else {
      if (!unk_id)
        throw Error("the tokenizer cannot encode \"" + std::string(piece) +
                    "\": the Unigram model has no unknown token (unk_id is null)");
      out.push_back({*unk_id, ob, oe, first, std::string(piece)});
    }
    first = false;
  }
}

}  // namespace roberta
