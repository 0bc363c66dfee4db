#pragma once
// HF's BertNormalizer's strip_accents (NFD, then the non-spacing marks removed) and lowercase
// (Rust's char::to_lowercase), each output character carrying the original byte span HF's
// NormalizedString gives it: what uncased WordPiece tokenizers apply before BertPreTokenizer.
//
//   std::vector<NormalizedChar> out;
//   normalize_bert({{U'Á', 0, 2}}, /*strip_accents=*/true, /*lowercase=*/true, out);  // {{'a', 0, 2}}
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "unicode.h"

namespace roberta {

struct NormalizedChar {
  char32_t cp;
  size_t begin, end;  // the original character's byte span
};

// The canonical decomposition of cp as HF's NFD has it (the Rust crate unicode-normalization-
// alignments, Unicode 9.0), in the order it emits it: writes 1 to 4 code points, returns the count.
size_t canonical_decomposition(char32_t cp, char32_t out[4]);
// The canonical combining class (0 for a starter, and for code points Unicode 9.0 did not assign).
uint8_t combining_class(char32_t cp);
// Rust's char::to_lowercase (Unicode 17.0): writes 1 or 2 code points, returns the count.
size_t rust_lowercase(char32_t cp, char32_t out[2]);

// strip_accents and lowercase as a stream: push() each character clean_text kept, in order, then
// finish(); emit(cp, begin, end) receives the normalized characters. NFD decomposes each character
// (its first code point replaces it, the others are added after it) and stably sorts every run of
// non-starters by combining class; the sources are then those HF's NormalizedString::transform
// gives, by position: a code point that replaces a character takes the next input character's
// span, an added one the span of the input character taken last.
template <class Emit>
class BertCaseFolder {
 public:
  BertCaseFolder(bool strip_accents, bool lowercase, Emit& emit)
      : strip_accents_(strip_accents), lowercase_(lowercase), emit_(emit) {}

  void push(char32_t cp, size_t begin, size_t end) {
    if (!strip_accents_) return lower(cp, begin, end);
    if (cp < 0xC0) {  // no decomposition, a starter: what is pending is final
      flush();
      return lower(cp, begin, end);
    }
    char32_t d[4];
    const size_t n = canonical_decomposition(cp, d);
    for (size_t k = 0; k < n; ++k) {
      const uint8_t ccc = combining_class(d[k]);
      if (ccc == 0) flush();
      if (k == 0) sources_.push_back({begin, end});  // (after the flush: what it emitted is dropped)
      pending_.push_back({d[k], ccc, k > 0});
    }
  }
  void finish() {
    if (strip_accents_) flush();
  }

 private:
  struct Piece {
    char32_t cp;
    uint8_t ccc;
    bool added;
  };
  void lower(char32_t cp, size_t begin, size_t end) {
    if (!lowercase_) return emit_(cp, begin, end);
    char32_t l[2];
    const size_t n = rust_lowercase(cp, l);
    for (size_t k = 0; k < n; ++k) emit_(l[k], begin, end);
  }
  // Emits the pending pieces (a starter, then the run of non-starters after it, sorted).
  void flush() {
    if (pending_.empty()) return;
    const auto run = std::find_if(pending_.begin(), pending_.end(), [](const Piece& p) { return p.ccc != 0; });
    std::stable_sort(run, pending_.end(), [](const Piece& a, const Piece& b) { return a.ccc < b.ccc; });
    for (const Piece& p : pending_) {
      if (!p.added) last_ = sources_[next_++];
      if (!unicode::is_bert_nonspacing_mark(p.cp)) lower(p.cp, last_.first, last_.second);
    }
    pending_.clear();
    if (next_ == sources_.size()) sources_.clear(), next_ = 0;
  }

  bool strip_accents_, lowercase_;
  Emit& emit_;
  std::vector<Piece> pending_;
  std::vector<std::pair<size_t, size_t>> sources_;  // of the characters pushed, from sources_[next_] not taken
  size_t next_ = 0;
  std::pair<size_t, size_t> last_{0, 0};  // the source taken last
};

// The same on a whole sequence: `in` (the characters clean_text kept) into `out`.
void normalize_bert(const std::vector<NormalizedChar>& in, bool strip_accents, bool lowercase,
                    std::vector<NormalizedChar>& out);

}  // namespace roberta
