// libFuzzer target: arbitrary bytes as text through the roberta-base tokenizer, a BERT-style
// WordPiece one (tests/data/hf/wordpiece), cased and uncased, and SentencePiece Unigram ones
// (tests/data/hf/unigram: Precompiled nmt_nfkc, Metaspace; with normalized added tokens; with byte
// fallback and its decoder chain): encode with and without special
// tokens, pairs, lists of words, truncation, invalid UTF-8 both ways; offsets inside the text;
// arbitrary ids to decode.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "roberta/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

std::string read_file(const char* path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// `json` with its first `from` replaced by `to`.
std::string edited(std::string json, const std::string& from, const std::string& to) {
  const size_t at = json.find(from);
  if (at == std::string::npos) __builtin_trap();
  return json.replace(at, from.size(), to);
}

// Entries of a tokenizer.json "added_tokens" list (not special, lstrip, rstrip), ids from `id`.
std::string added_tokens(int id, std::initializer_list<const char*> contents, bool normalized) {
  std::string added;
  for (const char* content : contents)
    added += std::string("{\"id\": ") + std::to_string(id++) + ", \"content\": \"" + content +
             "\", \"single_word\": false, \"lstrip\": true, \"rstrip\": true, \"normalized\": " +
             (normalized ? "true" : "false") + ", \"special\": false},";
  return added;
}

void run(const roberta::Tokenizer& tok, const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  roberta::EncodeOptions options;
  options.add_special_tokens = size % 2 == 0;
  options.max_length = size % 3 == 0 ? 0 : 4 + size % 13;
  try {
    tok.encode(text, options);
  } catch (const roberta::Error&) {
  }
  options.invalid_utf8 = roberta::InvalidUtf8::kReplace;
  const roberta::Encoding e = tok.encode(text, options);
  if (e.ids.size() != e.offsets.size() || e.ids.size() != e.tokens.size()) __builtin_trap();
  const std::string repaired = roberta::unicode::repair_utf8(text);  // (what kReplace encoded)
  const auto mid_character = [&](size_t at) { return at < repaired.size() && (repaired[at] & 0xC0) == 0x80; };
  for (size_t i = 0; i < e.size(); ++i) {
    const auto [b, end] = e.byte_offsets[i];
    if (b > end || static_cast<size_t>(end) > repaired.size()) __builtin_trap();
    if (!e.special_tokens_mask[i] && (mid_character(static_cast<size_t>(b)) || mid_character(static_cast<size_t>(end))))
      __builtin_trap();
  }
  const size_t half = size / 2;
  tok.encode_pair(text.substr(0, half), text.substr(half), options);
  // the bytes cut at spaces as a list of words (is_pretokenized), alone and as a pair
  const std::vector<std::string> words = roberta::fuzz::split(text, ' ');
  const roberta::Encoding w = tok.encode_words(words, options);
  if (w.word_ids.size() != w.ids.size()) __builtin_trap();
  for (size_t i = 0; i < w.size(); ++i) {
    if (w.word_ids[i] >= static_cast<int32_t>(words.size())) __builtin_trap();
    if (w.byte_offsets[i].first > w.byte_offsets[i].second || w.offsets[i].first > w.offsets[i].second)
      __builtin_trap();
  }
  const size_t cut = words.size() / 2;
  try {
    tok.encode_words_pair(std::span(words).first(cut), std::span(words).subspan(cut), options);
  } catch (const roberta::Error&) {  // (a truncation strategy may not be able to cut enough)
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 4 <= size; i += 4) ids.push_back(static_cast<int32_t>(data[i] | data[i + 1] << 8 | data[i + 2] << 16) - 1000);
  tok.decode(ids, size % 2 == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const roberta::Tokenizer tok =
      roberta::Tokenizer::from_dir(ROBERTA_SHARED_DIR "/assets/roberta-base-tokenizer");
  static const roberta::Tokenizer wordpiece = roberta::Tokenizer::from_dir(ROBERTA_TEST_DATA "/hf/wordpiece");
  // BertNormalizer's lowercase (and so strip_accents), and added tokens matched by their normalized
  // content in the normalized text
  static const roberta::Tokenizer uncased = roberta::Tokenizer::from_tokenizer_json_text(
      edited(edited(read_file(ROBERTA_TEST_DATA "/hf/wordpiece/tokenizer.json"), "\"lowercase\": false",
                    "\"lowercase\": true"),
             "\"added_tokens\": [",
             "\"added_tokens\": [" + added_tokens(500, {"\\u00c9a", "\\u4e2d\\u6587", "a\\u200bb", " x"}, true)),
      "uncased");
  // Unigram: normalized added tokens (matched after nmt_nfkc: "\uff46ull" is "full") and one that is not
  static const roberta::Tokenizer unigram = roberta::Tokenizer::from_tokenizer_json_text(
      edited(read_file(ROBERTA_TEST_DATA "/hf/unigram/tokenizer.json"), "\"added_tokens\": [",
             "\"added_tokens\": [" + added_tokens(2002, {"\\uff46ull", "a  b", "\\u00e9\\u0301", "\\u2581x"}, true) +
                 added_tokens(2006, {"[K]"}, false)),
      "unigram");
  static const roberta::Tokenizer byte_fallback =
      roberta::Tokenizer::from_dir(ROBERTA_TEST_DATA "/hf/unigram_byte_fallback");
  run(tok, data, size);
  run(wordpiece, data, size);
  run(uncased, data, size);
  run(unigram, data, size);
  run(byte_fallback, data, size);
  return 0;
}
