// HF's Precompiled normalizer (spm_precompiled) and extended grapheme clusters.
#include "precompiled.h"

#include <algorithm>
#include <stdexcept>

#include "unicode.h"

namespace roberta {

namespace {

struct GraphemeRange {
  char32_t first, last;
  uint8_t value;
};
#include "grapheme_tables.inc"

// Grapheme_Cluster_Break classes, in the table's order.
enum GraphemeClass : uint8_t {
  kOther, kCR, kLF, kControl, kExtend, kZWJ, kRegionalIndicator, kPrepend, kSpacingMark, kL, kV, kT, kLV, kLVT
};
constexpr uint8_t kExtPict = 16;
enum InCB : uint8_t { kNoInCB, kLinker, kConsonant, kInCBExtend };

uint8_t grapheme_value(char32_t cp) {
  const auto* end = std::end(kGraphemeRanges);
  const auto* it = std::upper_bound(std::begin(kGraphemeRanges), end, cp,
                                    [](char32_t c, const GraphemeRange& r) { return c < r.first; });
  if (it == std::begin(kGraphemeRanges)) return 0;
  --it;
  return cp <= it->last ? it->value : 0;
}

// The rules of UAX #29 between `prev` and `next` (GB3 to GB999); the state: the regional
// indicators ending at prev, ExtPict Extend* (ZWJ) before it (GB11), Consonant [Extend Linker]*
// with a Linker (GB9c).
struct BreakState {
  int ri = 0;
  int emoji = 0;  // 1: ExtPict Extend*, 2: then ZWJ
  int conjunct = 0;  // 1: Consonant [Extend Linker]*, 2: with a Linker
  void after(uint8_t v) {
    const uint8_t g = v & 15, incb = v >> 5;
    ri = g == kRegionalIndicator ? ri + 1 : 0;
    if (v & kExtPict)
      emoji = 1;
    else if (emoji == 1 && g == kExtend)
      emoji = 1;
    else if (emoji == 1 && g == kZWJ)
      emoji = 2;
    else
      emoji = 0;
    if (incb == kConsonant)
      conjunct = 1;
    else if (conjunct > 0 && incb == kLinker)
      conjunct = 2;
    else if (conjunct > 0 && incb == kInCBExtend)
      ;
    else
      conjunct = 0;
  }
};

bool is_break(uint8_t prev_v, uint8_t next_v, const BreakState& s) {
  const uint8_t prev = prev_v & 15, next = next_v & 15;
  if (prev == kCR && next == kLF) return false;                               // GB3
  if (prev == kControl || prev == kCR || prev == kLF) return true;           // GB4
  if (next == kControl || next == kCR || next == kLF) return true;           // GB5
  if (prev == kL && (next == kL || next == kV || next == kLV || next == kLVT)) return false;  // GB6
  if ((prev == kLV || prev == kV) && (next == kV || next == kT)) return false;              // GB7
  if ((prev == kLVT || prev == kT) && next == kT) return false;                            // GB8
  if (next == kExtend || next == kZWJ || next == kSpacingMark) return false;  // GB9, GB9a
  if (prev == kPrepend) return false;                                         // GB9b
  if ((next_v >> 5) == kConsonant && s.conjunct == 2) return false;           // GB9c
  if (prev == kZWJ && (next_v & kExtPict) && s.emoji == 2) return false;      // GB11
  if (prev == kRegionalIndicator && next == kRegionalIndicator && s.ri % 2 == 1) return false;  // GB12, GB13
  return true;                                                                // GB999
}

// spm_precompiled's DoubleArray units.
uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }
uint32_t unit_label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
bool unit_has_leaf(uint32_t u) { return (u >> 8) & 1; }
uint32_t unit_value(uint32_t u) { return u & ((1u << 31) - 1); }

}  // namespace

// Base64 as the crate spm_precompiled 0.1.4 decodes the charsmap (base64 0.13's decode: the
// standard alphabet, the final padding optional, a last symbol's unused bits zero).
std::string decode_base64(std::string_view text) {
  const auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  size_t n = text.size(), pad = 0;
  while (n > 0 && text[n - 1] == '=' && pad < 2) --n, ++pad;
  if (n % 4 == 1 || (pad > 0 && (n + pad) % 4 != 0))
    throw std::invalid_argument("not base64 (a length of " + std::to_string(text.size()) + ")");
  std::string out;
  out.reserve(n / 4 * 3 + 2);
  uint32_t bits = 0;
  for (size_t i = 0; i < n; ++i) {
    const int v = value(text[i]);
    if (v < 0) throw std::invalid_argument("not base64 (character " + std::to_string(i) + ")");
    bits = (bits << 6) | static_cast<uint32_t>(v);
    if (i % 4 == 3) {
      out.push_back(static_cast<char>(bits >> 16));
      out.push_back(static_cast<char>((bits >> 8) & 0xFF));
      out.push_back(static_cast<char>(bits & 0xFF));
      bits = 0;
    }
  }
  if (n % 4 == 2) {  // 12 bits: one byte and 4 unused bits
    if (bits & 0xF) throw std::invalid_argument("not base64 (unused bits in its last symbol)");
    out.push_back(static_cast<char>(bits >> 4));
  } else if (n % 4 == 3) {  // 18 bits: two bytes and 2 unused bits
    if (bits & 0x3) throw std::invalid_argument("not base64 (unused bits in its last symbol)");
    out.push_back(static_cast<char>(bits >> 10));
    out.push_back(static_cast<char>((bits >> 2) & 0xFF));
  }
  return out;
}

size_t grapheme_end(std::string_view text, size_t begin) {
  const size_t n = text.size();
  if (begin >= n) return n;
  const auto c0 = static_cast<unsigned char>(text[begin]);
  if (c0 < 0x80 && (begin + 1 == n || static_cast<unsigned char>(text[begin + 1]) < 0x80) &&
      !(c0 == '\r' && begin + 1 < n && text[begin + 1] == '\n'))
    return begin + 1;  // two ASCII characters always break but for CR LF
  size_t i = begin;
  uint8_t prev = grapheme_value(unicode::next_code_point(text, i));
  BreakState state;
  state.after(prev);
  while (i < n) {
    size_t j = i;
    const uint8_t next = grapheme_value(unicode::next_code_point(text, j));
    if (is_break(prev, next, state)) break;
    state.after(next);
    prev = next;
    i = j;
  }
  return i;
}

const char* grapheme_unicode_version() { return kGraphemeUnicodeVersion; }

Precompiled::Precompiled(std::string_view charsmap) {
  const auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (int k = 3; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(charsmap[at + static_cast<size_t>(k)]);
    return v;
  };
  if (charsmap.size() < 4) throw std::invalid_argument("shorter than its 4-byte trie size");
  // (spm_precompiled reads size / 4 units; the replacements follow them)
  const size_t trie_bytes = u32(0), units = trie_bytes / 4;
  if (4 * units > charsmap.size() - 4)
    throw std::invalid_argument("trie size " + std::to_string(trie_bytes) + " exceeds the " +
                                std::to_string(charsmap.size() - 4) + " bytes after it");
  units_.resize(units);
  for (size_t k = 0; k < units; ++k) units_[k] = u32(4 + 4 * k);
  replacements_.assign(charsmap.substr(4 + 4 * units));
  if (const auto bad = unicode::find_invalid_utf8(replacements_))
    throw std::invalid_argument("its replacement strings are not valid UTF-8 (byte " + std::to_string(*bad) + ")");
  if (units_.empty()) throw std::invalid_argument("its trie is empty");
}

std::optional<std::string_view> Precompiled::transform(std::string_view chunk) const {
  size_t node = unit_offset(units_[0]);
  for (const char ch : chunk) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) break;
    node ^= c;
    if (node >= units_.size()) return std::nullopt;
    const uint32_t unit = units_[node];
    if (unit_label(unit) != c) return std::nullopt;
    node ^= unit_offset(unit);
    if (unit_has_leaf(unit)) {
      if (node >= units_.size()) return std::nullopt;
      const size_t at = unit_value(units_[node]);
      if (at > replacements_.size()) return std::nullopt;  // (HF's crate would panic)
      const size_t end = replacements_.find('\0', at);
      const std::string_view r = std::string_view(replacements_).substr(at, end == std::string::npos ? end : end - at);
      if (!r.empty() && unicode::is_continuation_byte(r[0])) return std::nullopt;  // (HF: panic)
      return r;
    }
  }
  return std::nullopt;
}

namespace {

// spm_precompiled's replace: `to`'s characters replace `from`'s (HF's (char, change) pairs).
void push_replacement(std::vector<CharChange>& changes, std::string_view from, std::string_view to) {
  int old_count = 0, new_count = 0;
  for (char c : from) old_count += !unicode::is_continuation_byte(c);
  for (size_t i = 0; i < to.size(); ++new_count) changes.push_back({unicode::next_code_point(to, i), 0});
  const int diff = new_count - old_count;
  if (diff > 0) {
    for (size_t k = 0; k < static_cast<size_t>(diff); ++k) changes[changes.size() - 1 - k].change = 1;
  } else if (diff < 0 && !changes.empty()) {
    changes.back().change += diff;
  }
}

}  // namespace

void Precompiled::normalize(NormalizedText& n, size_t origin) const {
  thread_local std::vector<CharChange> changes;
  changes.clear();
  bool modified = false;
  const std::string_view text = n.text;
  for (size_t i = 0; i < text.size();) {
    const size_t end = grapheme_end(text, i);
    const std::string_view g = text.substr(i, end - i);
    if (g.size() < 6) {
      if (const auto r = transform(g)) {
        modified = true;
        push_replacement(changes, g, *r);
        i = end;
        continue;
      }
    }
    for (size_t j = i; j < end;) {
      const size_t at = j;
      const char32_t cp = unicode::next_code_point(text, j);
      const std::string_view part = text.substr(at, j - at);
      if (const auto r = g.size() < 6 && j == end && at == i ? std::nullopt : transform(part)) {
        modified = true;
        push_replacement(changes, part, *r);
      } else {
        changes.push_back({cp, 0});
      }
    }
    i = end;
  }
  if (modified) roberta::transform(n, changes, origin);
}

}  // namespace roberta
