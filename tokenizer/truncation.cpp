#include "truncation.h"

#include <algorithm>
#include <string>

#include "tokenizer_impl.h"

namespace roberta {

void keep_tokens(Encoding& e, size_t n, Side side) {
  if (e.size() <= n) return;
  const auto cut = [&](auto& v) {
    if (side == Side::kRight)
      v.resize(n);
    else
      v.erase(v.begin(), v.end() - static_cast<ptrdiff_t>(n));
  };
  cut(e.ids), cut(e.type_ids), cut(e.tokens), cut(e.offsets), cut(e.byte_offsets);
  cut(e.special_tokens_mask), cut(e.attention_mask), cut(e.sequence_ids), cut(e.word_ids);
}

size_t precut_length(const Encoding& e, size_t limit, Side side, const std::vector<TokenNotes>& notes) {
  const size_t n = e.size();
  const auto at = [&](size_t k) { return side == Side::kRight ? k : n - 1 - k; };
  size_t k = 0;
  while (k < n) {
    const int32_t w = e.word_ids[at(k)];
    const bool added = notes[at(k)].added_match;
    while (k < n && e.word_ids[at(k)] == w) ++k;
    if (!added && k >= limit) break;
  }
  return k;
}

namespace {

// HF (0.23) first cuts each input to whole words while tokenizing (precut_length). It tokenizes
// only the words it keeps, so their word ids count from the first of them.
void precut(Encoding& e, size_t limit, Side side, const std::vector<TokenNotes>& notes) {
  keep_tokens(e, precut_length(e, limit, side, notes), side);
  const auto first = std::find_if(e.word_ids.begin(), e.word_ids.end(), [](int32_t w) { return w >= 0; });
  if (first == e.word_ids.end() || *first == 0) return;
  const int32_t w0 = *first;
  for (int32_t& w : e.word_ids)
    if (w >= 0) w -= w0;
}

}  // namespace

// The strategies of HF: longest_first takes tokens from the longer text (splitting max_length
// evenly when both are long), only_first / only_second from one text only.
void truncate_inputs(Encoding& a, Encoding* b, const EncodeOptions& options, size_t specials,
                     const std::vector<TokenNotes>& notes_a, const std::vector<TokenNotes>& notes_b, bool words_a,
                     bool words_b) {
  const Side side = options.truncation_side;
  if (options.max_length < specials)
    throw Error("max_length " + std::to_string(options.max_length) + " is smaller than the " +
                std::to_string(specials) + " special tokens it must hold");
  const size_t max_len = options.max_length - specials;
  const size_t limit = std::max<size_t>(options.max_length, 1);
  if (options.truncation != TruncationStrategy::kOnlySecond && !words_a) precut(a, limit, side, notes_a);
  if (b && !words_b) precut(*b, limit, side, notes_b);
  const size_t total = a.size() + (b ? b->size() : 0);
  if (max_len == 0) {  // as HF: nothing but the special tokens remains, whatever the strategy
    keep_tokens(a, 0, side);
    if (b) keep_tokens(*b, 0, side);
  } else if (total > max_len) {
    if (options.truncation == TruncationStrategy::kLongestFirst) {
      if (b) {
        size_t n1 = a.size(), n2 = b->size();
        const bool swap = n1 > n2;
        if (swap) std::swap(n1, n2);
        n2 = n1 > max_len ? n1 : std::max(n1, max_len - n1);
        if (n1 + n2 > max_len) {
          n1 = max_len / 2;
          n2 = n1 + max_len % 2;
        }
        if (swap) std::swap(n1, n2);
        keep_tokens(a, n1, side);
        keep_tokens(*b, n2, side);
      } else {
        keep_tokens(a, max_len, side);
      }
    } else {
      const bool first = options.truncation == TruncationStrategy::kOnlyFirst;
      if (!first && !b) throw Error("truncation only_second needs a pair of texts");
      Encoding& target = first ? a : *b;
      const size_t to_remove = total - max_len;
      if (target.size() <= to_remove)
        throw Error(std::string("truncation ") + (first ? "only_first" : "only_second") +
                    ": the sequence is too short to remove " + std::to_string(to_remove) + " tokens");
      keep_tokens(target, target.size() - to_remove, side);
    }
  }
}

// Grows each encoding to the target length with <pad> tokens (special, attention 0, no word).
void Tokenizer::pad(std::span<Encoding> batch, const PaddingOptions& options) const {
  size_t length = options.length;
  if (length == 0)
    for (const Encoding& e : batch) length = std::max(length, e.size());
  if (options.multiple_of > 0 && length % options.multiple_of != 0)
    length += options.multiple_of - length % options.multiple_of;
  for (Encoding& e : batch) {
    if (e.size() >= length) continue;
    const size_t n = length - e.size();
    const auto grow = [&](auto& v, const auto& value) {
      if (options.side == Side::kRight)
        v.insert(v.end(), n, value);
      else
        v.insert(v.begin(), n, value);
    };
    grow(e.ids, impl_->pad_id), grow(e.type_ids, 0), grow(e.tokens, impl_->pad_token);
    grow(e.offsets, Offsets{0, 0}), grow(e.byte_offsets, Offsets{0, 0});
    grow(e.special_tokens_mask, uint8_t{1}), grow(e.attention_mask, uint8_t{0});
    grow(e.sequence_ids, int8_t{-1}), grow(e.word_ids, int32_t{-1});
  }
}

}  // namespace roberta
