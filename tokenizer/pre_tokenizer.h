#pragma once
// GPT-2 pre-tokenization without a regex engine. It splits text exactly like
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// and calls emit(begin, end) with byte offsets of each piece, in order. Text must be valid UTF-8.
#include <cstddef>
#include <string_view>

#include "unicode.h"

namespace roberta {

namespace detail {
// Class of the code point at s[i]; sets `len` to its byte length.
inline uint8_t class_at(std::string_view s, size_t i, size_t& len) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    len = 1;
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return unicode::kLetter;
    if (c >= '0' && c <= '9') return unicode::kNumber;
    if (c == ' ' || (c >= 0x09 && c <= 0x0D)) return unicode::kWhitespace;
    return 0;
  }
  size_t j = i;
  const char32_t cp = unicode::next_code_point(s, j);
  len = j - i;
  return unicode::char_class(cp);
}
}  // namespace detail

template <class Emit>
void split_gpt2(std::string_view s, Emit&& emit) {
  using namespace unicode;
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const char c = s[i];
    if (c == '\'' && i + 1 < n) {
      const char d = s[i + 1];
      if (d == 's' || d == 't' || d == 'm' || d == 'd') {
        emit(i, i + 2);
        i += 2;
        continue;
      }
      if (i + 2 < n) {
        const char e = s[i + 2];
        if ((d == 'r' && e == 'e') || (d == 'v' && e == 'e') || (d == 'l' && e == 'l')) {
          emit(i, i + 3);
          i += 3;
          continue;
        }
      }
    }
    size_t len;
    const size_t p = (c == ' ' && i + 1 < n) ? i + 1 : i;  // ` ?` prefix
    const uint8_t k = detail::class_at(s, p, len);
    if (!(k & kWhitespace)) {
      // ` ?\p{L}+`, ` ?\p{N}+` or ` ?[^\s\p{L}\p{N}]+`: a run of one class.
      const uint8_t run = k & (kLetter | kNumber);
      size_t j = p + len;
      while (j < n) {
        const uint8_t kj = detail::class_at(s, j, len);
        const bool same = run ? (kj & run) != 0 : !(kj & (kLetter | kNumber | kWhitespace));
        if (!same) break;
        j += len;
      }
      emit(i, j);
      i = j;
      continue;
    }
    // `\s+(?!\S)|\s+` at a whitespace character.
    size_t j = i, last = i, chars = 0;
    while (j < n && (detail::class_at(s, j, len) & kWhitespace)) {
      last = j;
      j += len;
      ++chars;
    }
    const size_t end = (j == n || chars == 1) ? j : last;
    emit(i, end);
    i = end;
  }
}

}  // namespace roberta
