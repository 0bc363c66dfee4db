// HF's NormalizedString edits, on NormalizedText.
#include "normalized_text.h"

#include "unicode.h"

namespace roberta {

void NormalizedText::assign(std::string_view input, size_t begin, size_t end) {
  text.assign(input.substr(begin, end - begin));
  source.resize(text.size());
  for (size_t i = begin; i < end;) {
    const size_t at = i;
    unicode::next_code_point(input, i);
    for (size_t k = at; k < i; ++k) source[k - begin] = {at, i};
  }
}

void transform(NormalizedText& n, const std::vector<CharChange>& changes, size_t origin) {
  // `cursor`: the next byte of the old text not yet replaced or removed (HF's offset).
  size_t cursor = 0;
  const auto skip_char = [&] {
    if (cursor >= n.text.size()) return;
    size_t i = cursor;
    unicode::next_code_point(n.text, i);
    cursor = i;
  };
  std::string text;
  std::vector<std::pair<size_t, size_t>> source;
  text.reserve(n.text.size());
  source.reserve(n.source.size());
  const std::pair<size_t, size_t> none{origin, origin};
  for (const CharChange& c : changes) {
    const size_t idx = cursor;
    std::pair<size_t, size_t> span;
    if (c.change > 0)
      span = idx < 1 ? none : n.source[idx - 1];
    else
      span = idx < n.source.size() ? n.source[idx] : (n.source.empty() ? none : n.source.back());
    if (c.change <= 0) skip_char();
    for (int k = 0; k < -c.change; ++k) skip_char();
    const size_t before = text.size();
    unicode::append_utf8(text, c.cp);
    source.insert(source.end(), text.size() - before, span);
  }
  n.text = std::move(text);
  n.source = std::move(source);
}

void replace_matches(NormalizedText& n, const std::vector<std::pair<size_t, size_t>>& matches,
                     std::string_view content) {
  if (matches.empty()) return;
  std::string text;
  std::vector<std::pair<size_t, size_t>> source;
  text.reserve(n.text.size());
  source.reserve(n.source.size());
  size_t last = 0;
  for (const auto& [begin, end] : matches) {
    text.append(n.text, last, begin - last);
    source.insert(source.end(), n.source.begin() + static_cast<ptrdiff_t>(last),
                  n.source.begin() + static_cast<ptrdiff_t>(begin));
    text.append(content);
    source.insert(source.end(), content.size(), n.source[end - 1]);
    last = end;
  }
  text.append(n.text, last);
  source.insert(source.end(), n.source.begin() + static_cast<ptrdiff_t>(last), n.source.end());
  n.text = std::move(text);
  n.source = std::move(source);
}

void prepend(NormalizedText& n, std::string_view s) {
  if (n.text.empty() || s.empty()) return;
  n.text.insert(0, s);
  n.source.insert(n.source.begin(), s.size(), n.source.front());
}

}  // namespace roberta
