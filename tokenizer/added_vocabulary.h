#pragma once
// The added vocabulary (HF's AddedVocabulary): tokens such as <s> or <mask> that are found in the
// raw text before pre-tokenization, leftmost-longest, with their single_word, lstrip and rstrip
// rules. Non-normalized tokens are matched first, then normalized ones in the text between.
#include <array>
#include <cstddef>
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

  // Rebuilds the match index after `tokens` changed.
  void index();
  // Appends the segments of `text`, in order and covering it.
  void split(std::string_view text, std::vector<Segment>& out) const;

 private:
  // Matches the tokens of one pass (0: non-normalized, 1: normalized) in text[from, to).
  void match(std::string_view text, size_t from, size_t to, int pass, std::vector<Segment>& out) const;

  // Indices into `tokens` by first byte, longest first, for pass [0] and pass [1].
  std::array<std::array<std::vector<int>, 256>, 2> by_first_byte_;
};

}  // namespace roberta
