// Encoding's alignment queries, as HF tokenizers' Encoding answers them (tokenizer/encoding.rs:
// sequence_range, token_to_sequence, word_to_tokens, ...). HF keeps a range of tokens per
// sequence; here it is where the sequence ids say, an empty range for an empty text of a pair,
// and every token for a sequence the encoding does not have (HF's unwrap_or(0..len)).
#include <algorithm>

#include "roberta/tokenizer.h"

namespace roberta {

std::pair<size_t, size_t> Encoding::sequence_range(int sequence) const {
  if (sequence >= n_sequences || sequence_ids.size() != size()) return {0, size()};
  size_t first = size(), end = 0;
  for (size_t i = 0; i < size(); ++i)
    if (sequence_ids[i] == sequence) first = std::min(first, i), end = i + 1;
  return first < end ? std::pair{first, end} : std::pair<size_t, size_t>{0, 0};
}

std::optional<int> Encoding::token_to_sequence(size_t token) const {
  if (token >= size() || token >= sequence_ids.size() || sequence_ids[token] < 0) return std::nullopt;
  return sequence_ids[token];
}

std::optional<int32_t> Encoding::token_to_word(size_t token) const {
  if (!token_to_sequence(token) || token >= word_ids.size() || word_ids[token] < 0) return std::nullopt;
  return word_ids[token];
}

std::optional<Offsets> Encoding::token_to_chars(size_t token) const {
  if (!token_to_sequence(token)) return std::nullopt;
  return offsets[token];
}

// The tokens of the range up to the first of a later word (tokens of no word do not stop it).
std::optional<std::pair<size_t, size_t>> Encoding::word_to_tokens(int32_t word, int sequence) const {
  if (word < 0 || sequence < 0 || word_ids.size() != size()) return std::nullopt;  // (HF's are unsigned)
  const auto [begin, end] = sequence_range(sequence);
  std::optional<std::pair<size_t, size_t>> span;
  for (size_t i = begin; i < end && word_ids[i] <= word; ++i)
    if (word_ids[i] == word) span = {span ? span->first : i, i + 1};
  return span;
}

std::optional<Offsets> Encoding::word_to_chars(int32_t word, int sequence) const {
  const auto span = word_to_tokens(word, sequence);
  if (!span) return std::nullopt;
  return Offsets{offsets[span->first].first, offsets[span->second - 1].second};
}

std::optional<size_t> Encoding::char_to_token(int64_t pos, int sequence) const {
  if (pos < 0 || sequence < 0 || offsets.size() != size()) return std::nullopt;
  const auto [begin, end] = sequence_range(sequence);
  for (size_t i = begin; i < end; ++i)
    if (pos >= offsets[i].first && pos < offsets[i].second) return i;
  return std::nullopt;
}

std::optional<int32_t> Encoding::char_to_word(int64_t pos, int sequence) const {
  const auto token = char_to_token(pos, sequence);
  return token ? token_to_word(*token) : std::nullopt;
}

}  // namespace roberta
