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
  nodes_.assign(1, TrieNode{});
  for (size_t k : order) {
    const std::string_view piece = pieces[k];
    if (piece.empty()) continue;  // (HF's trie never yields an empty piece)
    size_t common = 0;
    while (common < piece.size() && common < previous.size() && piece[common] == previous[common]) ++common;
    path.resize(common + 1);
    for (size_t i = common; i < piece.size(); ++i) {
      const auto node = static_cast<uint32_t>(nodes_.size());
      nodes_.push_back(TrieNode{});
      edges.push_back({path.back(), node, static_cast<uint8_t>(piece[i])});
      path.push_back(node);
    }
    nodes_[path.back()].leaf = vocab.find(piece)->second;
    previous = piece;
  }
  // each node's children gathered, in label order (the order they were created in)
  nodes_.push_back(TrieNode{});  // (closes the last node's list)
  for (const Edge& e : edges) ++nodes_[e.parent + 1].first;
  for (size_t k = 1; k < nodes_.size(); ++k) nodes_[k].first += nodes_[k - 1].first;
  std::vector<uint32_t> fill(nodes_.size());
  for (size_t k = 0; k < nodes_.size(); ++k) fill[k] = nodes_[k].first;
  labels_.assign(edges.size(), 0);
  targets_.assign(edges.size(), 0);
  root_child_.fill(0);
  for (const Edge& e : edges) {
    labels_[fill[e.parent]] = e.label;
    targets_[fill[e.parent]++] = e.child;
    if (e.parent == 0) root_child_[e.label] = e.child;
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
    for (size_t i = b; i < e;) {  // runs without a space copied whole
      const size_t space = std::min(e, std::string_view(n.text).substr(0, e).find(' ', i));
      pre.text.append(n.text, i, space - i);
      pre.source.insert(pre.source.end(), n.source.begin() + static_cast<ptrdiff_t>(i),
                        n.source.begin() + static_cast<ptrdiff_t>(space));
      if (space == e) break;
      pre.text += replacement;
      pre.source.insert(pre.source.end(), replacement.size(), n.source[space]);
      i = space + 1;
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
    pre.release_if_large();
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
  pre.release_if_large();
}

void UnigramModel::encode_word(std::string_view word, const std::vector<std::pair<size_t, size_t>>& source,
                               size_t at, std::vector<UnigramToken>& out) const {
  if (word.empty()) return;
  struct Best {
    double score = 0;
    int64_t start = -1;
    int32_t id = 0;
  };
  thread_local std::vector<Best> best;
  const size_t size = word.size();
  best.assign(size + 1, Best{});
  const double unk_score = min_score_ - 10.0;  // HF's K_UNK_PENALTY
  const auto offer = [&](size_t target, size_t start, double score, int32_t id) {
    Best& b = best[target];
    if (b.start < 0 || score > b.score) b = {score, static_cast<int64_t>(start), id};
  };
  for (size_t pos = 0; pos < size;) {
    const double till = best[pos].score;
    const size_t mblen = utf8_length(word[pos]);
    bool single = false;
    uint32_t node = 0;
    for (size_t j = pos; j < size; ++j) {
      const auto c = static_cast<uint8_t>(word[j]);
      if (j == pos) {
        node = root_child_[c];
        if (node == 0) break;
      } else {
        const uint8_t* lo = labels_.data() + nodes_[node].first;
        const uint8_t* hi = labels_.data() + nodes_[node + 1].first;
        const uint8_t* found = lo;
        if (hi - lo <= 8) {
          while (found < hi && *found < c) ++found;
        } else {
          found = std::lower_bound(lo, hi, c);
        }
        if (found == hi || *found != c) break;
        node = targets_[static_cast<size_t>(found - labels_.data())];
      }
      if (const int32_t id = nodes_[node].leaf; id >= 0) {
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
  // The best path, back to front; runs of the unknown token fused into one (-1 marks them: their
  // id is looked up as HF looks it up, from their text).
  struct Range {
    size_t begin, end;
    int32_t id;
  };
  thread_local std::vector<Range> ranges;
  ranges.clear();
  bool in_unknown = false;
  for (size_t end = size; end > 0;) {
    const Best& b = best[end];
    const auto start = static_cast<size_t>(b.start);
    if (unk_id && b.id == *unk_id) {
      if (in_unknown)
        ranges.back().begin = start;
      else
        ranges.push_back({start, end, -1});
      in_unknown = true;
    } else {
      ranges.push_back({start, end, b.id});  // (the piece's id: the vocabulary's last one of its text)
      in_unknown = false;
    }
    end = start;
  }
  bool first = true;
  for (auto r = ranges.rbegin(); r != ranges.rend(); ++r) {
    const std::string_view piece = word.substr(r->begin, r->end - r->begin);
    const size_t ob = source[at + r->begin].first, oe = source[at + r->end - 1].second;
    if (r->id >= 0) {
      out.push_back({r->id, ob, oe, first, {}});
    } else if (const auto it = vocab.find(piece); it != vocab.end()) {
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
  if (best.capacity() > (size_t{1} << 20)) best = {}, ranges = {};  // (a long word's buffers freed)
}

}  // namespace roberta
