#pragma once
// HF's WordPiece model, with BERT's normalizer (BertNormalizer: clean_text, handle_chinese_chars,
// strip_accents, lowercase) and pre-tokenizer (BertPreTokenizer: words split at white space, each
// punctuation character a word of its own), giving offsets into the original text. What some
// `model_type: roberta` checkpoints ship (e.g. a BertTokenizer beside a RoBERTa model).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "normalized_text.h"
#include "string_hash.h"

namespace roberta {

struct WordPieceToken {
  int32_t id;
  size_t begin, end;  // byte offsets into the text
  bool first_of_word;
};

struct WordPieceModel {
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> vocab;
  int32_t unk_id = -1;
  std::string continuing_subword_prefix = "##";
  size_t max_input_chars_per_word = 100;
  bool clean_text = false;            // BertNormalizer's: drops NUL, U+FFFD and control / format characters
  bool handle_chinese_chars = false;  // BertNormalizer's: each CJK ideograph a word of its own
  bool strip_accents = false;         // BertNormalizer's: NFD, then the non-spacing marks removed
  bool lowercase = false;             // BertNormalizer's: Rust's char::to_lowercase

  // Appends the tokens of the valid UTF-8 text[begin, end) to `out`.
  void tokenize(std::string_view text, size_t begin, size_t end, std::vector<WordPieceToken>& out) const;

  // BertNormalizer's output as HF's NormalizedString holds it: the normalized text (white space
  // mapped to a space by clean_text, spaces around CJK ideographs, accents stripped, lowercased)
  // and, for each of its bytes, the original span of the character it comes from. Normalized added
  // tokens are matched in it; tokenize_normalized then tokenizes the text between them.
  using NormalizedText = roberta::NormalizedText;
  bool normalizes() const { return clean_text || handle_chinese_chars || strip_accents || lowercase; }
  void normalize(std::string_view text, size_t begin, size_t end, NormalizedText& out) const;
  void tokenize_normalized(const NormalizedText& n, size_t from, size_t to, std::vector<WordPieceToken>& out) const;

 private:
  // One word: its normalized text and, per character, the original byte span.
  struct Word {
    std::string text;
    std::vector<uint32_t> char_of_byte;        // character index of each byte of `text`
    std::vector<std::pair<size_t, size_t>> source;  // original [begin, end) of each character
  };
  void tokenize_word(const Word& w, std::vector<WordPieceToken>& out) const;
  // What clean_text removes (before it maps white space to a space).
  bool cleaned_away(char32_t cp) const;
  // Calls for_each_char(pre_tokenize) which gives each normalized character (cp, begin, end) to
  // BertPreTokenizer, and WordPiece the words it makes.
  template <class ForEachChar>
  void tokenize_chars(ForEachChar&& for_each_char, std::vector<WordPieceToken>& out) const;
};

}  // namespace roberta
