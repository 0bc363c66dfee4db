#pragma once
// Truncation of the tokens of one or two texts to EncodeOptions::max_length, as HF's
// truncate_encodings (with the whole-word pre-cut of tokenizers 0.23). Tokenizer::pad is in
// truncation.cpp too.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "roberta/tokenizer.h"

namespace roberta {

// What encoding keeps beside each token of a text until the post-processor: what HF's
// trim_offsets may take off the token's offsets (its leading and trailing spaces), and whether it
// is an added token matched in the text (a piece HF's whole-word pre-cut never stops at).
struct TokenNotes {
  uint32_t lead_chars = 0, lead_bytes = 0, trail_chars = 0, trail_bytes = 0;
  bool added_match = false;
};

// Cuts the tokens of text A (`a`) and of text B (`b`, null for a single text) so that they and
// the `specials` special tokens still to be added fit options.max_length (which must be > 0).
// notes_a / notes_b: those of a's / b's tokens (b's unused without b), for the pre-cut. Throws Error
// when max_length cannot hold the specials or the strategy cannot remove enough tokens.
// A pre-tokenized input (`words_a`, `words_b`) gets no pre-cut here: HF cuts each of its words
// alone (see precut_length), and keeps their word ids.
void truncate_inputs(Encoding& a, Encoding* b, const EncodeOptions& options, size_t specials,
                     const std::vector<TokenNotes>& notes_a, const std::vector<TokenNotes>& notes_b,
                     bool words_a = false, bool words_b = false);

// HF 0.23's whole-word pre-cut (PreTokenizedString::tokenize_with_limit): how many tokens of `e`
// (one text or one word, its word ids those of its pre-tokens) it keeps, walking from the kept
// side and stopping after the first ordinary (not added-token) piece at which `limit` is reached.
// `notes`: those of e's tokens.
size_t precut_length(const Encoding& e, size_t limit, Side side, const std::vector<TokenNotes>& notes);
// Keeps `n` tokens of `e`, dropping from the end (kRight) or the start (kLeft).
void keep_tokens(Encoding& e, size_t n, Side side);

}  // namespace roberta
