#include "bert_normalizer.h"

#include <algorithm>
#include <iterator>

namespace roberta {

namespace {

struct Decomposition {
  uint32_t cp;
  uint32_t to[4];  // 0 after the last
};
struct CombiningClass {
  uint32_t cp;
  uint8_t ccc;
};
struct LowercaseMapping {
  uint32_t cp;
  uint32_t to[2];  // 0 after the last
};

#include "bert_normalizer_tables.inc"

template <class T, size_t N>
const T* find(const T (&table)[N], char32_t cp) {
  const auto before = [](const T& e, char32_t c) { return e.cp < c; };
  const T* it = std::lower_bound(std::begin(table), std::end(table), cp, before);
  return it != std::end(table) && it->cp == cp ? it : nullptr;
}

// Hangul syllables decompose algorithmically (Unicode 3.12): leading consonant, vowel, trailing one.
constexpr char32_t kSyllableBase = 0xAC00, kLeadBase = 0x1100, kVowelBase = 0x1161, kTrailBase = 0x11A7;
constexpr char32_t kVowels = 21, kTrails = 28, kSyllables = 19 * kVowels * kTrails;

}  // namespace

size_t canonical_decomposition(char32_t cp, char32_t out[4]) {
  if (cp >= kSyllableBase && cp < kSyllableBase + kSyllables) {
    const char32_t s = cp - kSyllableBase;
    out[0] = kLeadBase + s / (kVowels * kTrails);
    out[1] = kVowelBase + s % (kVowels * kTrails) / kTrails;
    if (s % kTrails == 0) return 2;
    out[2] = kTrailBase + s % kTrails;
    return 3;
  }
  const Decomposition* d = cp < 0xC0 ? nullptr : find(kDecompositions, cp);
  if (!d) {
    out[0] = cp;
    return 1;
  }
  size_t n = 0;
  while (n < 4 && d->to[n]) out[n] = d->to[n], ++n;
  return n;
}

uint8_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const CombiningClass* c = find(kCombiningClasses, cp);
  return c ? c->ccc : 0;
}

size_t rust_lowercase(char32_t cp, char32_t out[2]) {
  if (cp < 0x80) {
    out[0] = cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
    return 1;
  }
  const LowercaseMapping* m = find(kRustLowercase, cp);
  if (!m) {
    out[0] = cp;
    return 1;
  }
  out[0] = m->to[0];
  if (!m->to[1]) return 1;
  out[1] = m->to[1];
  return 2;
}

void normalize_bert(const std::vector<NormalizedChar>& in, bool strip_accents, bool lowercase,
                    std::vector<NormalizedChar>& out) {
  out.clear();
  auto emit = [&](char32_t cp, size_t begin, size_t end) { out.push_back({cp, begin, end}); };
  BertCaseFolder folder(strip_accents, lowercase, emit);
  for (const NormalizedChar& c : in) folder.push(c.cp, c.begin, c.end);
  folder.finish();
}

}  // namespace roberta
