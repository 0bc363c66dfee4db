#pragma once
// UTF-8 decoding/validation and the character classes of GPT-2 pre-tokenization and of BERT's
// normalizer and pre-tokenizer.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace roberta::unicode {

// kWord: Rust regex's \w (Alphabetic, marks, decimal digits, connector punctuation, ZWNJ / ZWJ).
// kBertOther, kBertPunct: the categories HF's BertNormalizer / BertPreTokenizer take from the Rust
// crate unicode_categories (Unicode 8.0): Cc, Cf or Co; P*; and Mn (what strip_accents removes).
enum CharClass : uint8_t {
  kLetter = 1, kNumber = 2, kWhitespace = 4, kMark = 8, kWord = 16, kBertOther = 32, kBertPunct = 64, kBertMn = 128
};

uint8_t char_class(char32_t cp);
const char* unicode_version();

// Byte length of the valid UTF-8 sequence starting at text[i], or 0 if it is not valid
// (overlong, surrogate, > U+10FFFF, truncated, stray continuation byte).
size_t valid_sequence_length(std::string_view text, size_t i);

// Byte offset of the first invalid sequence, or nullopt when `text` is valid UTF-8.
std::optional<size_t> find_invalid_utf8(std::string_view text);

// `text` with each maximal invalid subsequence replaced by U+FFFD (Python's errors="replace",
// Rust's from_utf8_lossy).
std::string repair_utf8(std::string_view text);

// Decodes the code point at text[i] of valid UTF-8 and advances i.
inline char32_t next_code_point(std::string_view text, size_t& i) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  const auto b = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(text[i + k]) & 0x3F); };
  char32_t cp;
  if (b0 < 0xE0) {
    cp = (static_cast<char32_t>(b0 & 0x1F) << 6) | b(1);
    i += 2;
  } else if (b0 < 0xF0) {
    cp = (static_cast<char32_t>(b0 & 0x0F) << 12) | (b(1) << 6) | b(2);
    i += 3;
  } else {
    cp = (static_cast<char32_t>(b0 & 0x07) << 18) | (b(1) << 12) | (b(2) << 6) | b(3);
    i += 4;
  }
  return cp;
}

// White space as the pre-tokenizer's \s sees it.
inline bool is_whitespace(char32_t cp) { return char_class(cp) & kWhitespace; }

// HF's BertNormalizer: what clean_text removes (besides NUL and U+FFFD), and what it and
// BertPreTokenizer count as white space.
inline bool is_bert_control(char32_t cp) {
  return cp != '\t' && cp != '\n' && cp != '\r' && (char_class(cp) & kBertOther);
}
// BertPreTokenizer's punctuation: ASCII punctuation or a P* character; each is a word of its own.
inline bool is_bert_punctuation(char32_t cp) {
  if (cp < 0x80) return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
                        (cp >= 0x7B && cp <= 0x7E);
  return char_class(cp) & kBertPunct;
}
// BertNormalizer's strip_accents: the non-spacing marks it removes after NFD.
inline bool is_bert_nonspacing_mark(char32_t cp) { return char_class(cp) & kBertMn; }
// BertNormalizer's handle_chinese_chars: the CJK ideograph blocks it puts spaces around.
inline bool is_chinese_char(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

inline bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

void append_utf8(std::string& out, char32_t cp);

}  // namespace roberta::unicode
