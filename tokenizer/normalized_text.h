#pragma once
// A normalizer's output as HF's NormalizedString holds it: the normalized text and, for each of
// its bytes, the original [begin, end) of the character it comes from (byte offsets into the
// input text); and HF's edits of it, which give each new character its span by position as
// NormalizedString::transform_range / replace / prepend do.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace roberta {

struct NormalizedText {
  std::string text;
  std::vector<std::pair<size_t, size_t>> source;  // per byte of `text`

  // text[begin, end) of valid UTF-8 as it is: each byte spans its character.
  void assign(std::string_view input, size_t begin, size_t end);
  // Frees the memory of a reused (thread_local) buffer that a long text grew past 1 MB.
  void release_if_large() {
    if (text.capacity() > (size_t{1} << 20)) *this = NormalizedText{};
  }
};

// One character of a transformation (HF's (char, isize)): 0 replaces the next character, 1 is
// added after the last one, -k replaces the next one and removes the k after it.
struct CharChange {
  char32_t cp;
  int change;
};

// HF's NormalizedString::transform_range on the whole text (initial_offset 0): `changes` replace
// it. `origin` is the span an added character takes at the very start (HF's (0, 0) of the string's
// own original).
void transform(NormalizedText& n, const std::vector<CharChange>& changes, size_t origin);

// HF's NormalizedString::replace of each [begin, end) of `matches` (in order, not overlapping) by
// `content`: its characters take the span of the match's last byte.
void replace_matches(NormalizedText& n, const std::vector<std::pair<size_t, size_t>>& matches,
                     std::string_view content);

// HF's NormalizedString::prepend: `s` before the first character, with its span.
void prepend(NormalizedText& n, std::string_view s);

}  // namespace roberta
