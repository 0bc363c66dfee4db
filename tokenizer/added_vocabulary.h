#pragma once
// The added vocabulary (HF's AddedVocabulary): tokens such as <s> or <mask> that are found in the
// raw text before pre-tokenization, leftmost-longest, with their single_word, lstrip and rstrip
// rules. Non-normalized tokens are matched first, then normalized ones in the text between (in
// the normalized text, by their normalized content, where the tokenizer has a normalizer).
#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/tokenizer.h"

namespace roberta {

// A piece of input text: either plain text to pre-tokenize and BPE, or one added token.
struct Segment {
  size_t begin, end;  // byte offsets into the text
  int added = -1;     // index into AddedVocabulary::tokens, -1 for plain text
};

class AddedVocabulary {
 public:
  std::vector<AddedToken> tokens;  // in the order of the tokenizer files

  // Rebuilds the match index after `tokens` changed. `normalize`, when given, is the tokenizer's
  // normalizer: normalized tokens are then matched by their normalized content (in normalized text).
  void index(const std::function<std::string(std::string_view)>& normalize = {});
  // Appends the segments of `text`, in order and covering it (both passes over the raw text).
  void split(std::string_view text, std::vector<Segment>& out) const;
  // The first pass alone (non-normalized tokens), and the second (normalized tokens) alone, over
  // a text already normalized.
  void split_raw(std::string_view text, std::vector<Segment>& out) const { match(text, 0, text.size(), 0, out); }
  void split_normalized(std::string_view normalized, std::vector<Segment>& out) const {
    match(normalized, 0, normalized.size(), 1, out);
  }
  bool has_normalized() const { return has_normalized_; }
  // What token i matches (its content, or its normalized content).
  const std::string& match_text(size_t i) const { return match_text_[i]; }

 private:
  // Matches the tokens of one pass (0: non-normalized, 1: normalized) in text[from, to).
  void match(std::string_view text, size_t from, size_t to, int pass, std::vector<Segment>& out) const;

  std::vector<std::string> match_text_;  // what each token matches: its content, or its normalized content
  bool has_normalized_ = false;

  // Indices into `tokens` by first byte, longest first, for pass [0] and pass [1].
  std::array<std::array<std::vector<int>, 256>, 2> by_first_byte_;
};

}  // namespace roberta
