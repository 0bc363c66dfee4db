#include "lowercase.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "roberta/error.h"
#include "unicode.h"

namespace roberta {

namespace {

struct LowercaseEntry {
  uint32_t cp;
  const char* lower;  // UTF-8
};
struct CodePointRange {
  uint32_t first, last;
};

#include "lowercase_table.inc"

template <size_t N>
bool in_ranges(const CodePointRange (&ranges)[N], char32_t cp) {
  const auto it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                                   [](char32_t c, const CodePointRange& r) { return c < r.first; });
  return it != std::begin(ranges) && cp <= std::prev(it)->last;
}

bool cased(char32_t cp) { return in_ranges(kCased, cp); }
bool case_ignorable(char32_t cp) { return in_ranges(kCaseIgnorable, cp); }

// Python's handle_capital_sigma: ς when a cased letter precedes (case-ignorable ones skipped) and
// no cased letter follows (likewise).
bool final_sigma(const std::vector<char32_t>& cps, size_t i) {
  size_t j = i;
  while (j > 0 && case_ignorable(cps[j - 1])) --j;
  if (j == 0 || !cased(cps[j - 1])) return false;
  size_t k = i + 1;
  while (k < cps.size() && case_ignorable(cps[k])) ++k;
  return k == cps.size() || !cased(cps[k]);
}

}  // namespace

std::string lowercase(std::string_view text) {
  if (const auto bad = unicode::find_invalid_utf8(text))
    throw Error("invalid UTF-8 at byte " + std::to_string(*bad));
  std::vector<char32_t> cps;
  for (size_t i = 0; i < text.size();) cps.push_back(unicode::next_code_point(text, i));
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t cp = cps[i];
    if (cp == 0x3A3) {
      unicode::append_utf8(out, final_sigma(cps, i) ? 0x3C2 : 0x3C3);
      continue;
    }
    const auto it = std::lower_bound(std::begin(kLowercase), std::end(kLowercase), cp,
                                     [](const LowercaseEntry& e, char32_t c) { return e.cp < c; });
    if (it != std::end(kLowercase) && it->cp == cp)
      out += it->lower;
    else
      unicode::append_utf8(out, cp);
  }
  return out;
}

}  // namespace roberta
