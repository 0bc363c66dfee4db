#pragma once
// Truncation of the tokens of one or two texts to EncodeOptions::max_length, as HF's
// truncate_encodings (with the whole-word pre-cut of tokenizers 0.23). Tokenizer::pad is in
// truncation.cpp too.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "roberta/tokenizer.h"

namespace roberta {

// Cuts the tokens of text A (`a`) and of text B (`b`, null for a single text) so that they and
// the `specials` special tokens still to be added fit options.max_length (which must be > 0).
// is_added_id: 1 for the ids of added tokens, where the whole-word pre-cut never stops. Throws Error
// when max_length cannot hold the specials or the strategy cannot remove enough tokens.
// A pre-tokenized input (`words_a`, `words_b`) gets no pre-cut here: HF cuts each of its words
// alone (see precut_length), and keeps their word ids.
void truncate_inputs(Encoding& a, Encoding* b, const EncodeOptions& options, size_t specials,
                     const std::vector<uint8_t>& is_added_id, bool words_a = false, bool words_b = false);

// HF 0.23's whole-word pre-cut (PreTokenizedString::tokenize_with_limit): how many tokens of `e`
// (one text or one word, its word ids those of its pre-tokens) it keeps, walking from the kept
// side and stopping after the first ordinary (not added-token) piece at which `limit` is reached.
size_t precut_length(const Encoding& e, size_t limit, Side side, const std::vector<uint8_t>& is_added_id);
// Keeps `n` tokens of `e`, dropping from the end (kRight) or the start (kLeft).
void keep_tokens(Encoding& e, size_t n, Side side);

}  // namespace roberta
