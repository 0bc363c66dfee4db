// libFuzzer target: arbitrary bytes as text through the roberta-base tokenizer and a BERT-style
// WordPiece one (tests/data/hf/wordpiece), cased and uncased: encode with and without special
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
#include "unicode.h"

namespace {

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
  static const roberta::Tokenizer uncased = [] {
    std::ifstream in(ROBERTA_TEST_DATA "/hf/wordpiece/tokenizer.json");
    std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto edit = [&](const std::string& from, const std::string& to) {
      const size_t at = json.find(from);
      if (at == std::string::npos) __builtin_trap();
      json.replace(at, from.size(), to);
    };
    edit("\"lowercase\": false", "\"lowercase\": true");
    std::string added = "\"added_tokens\": [";
    int id = 500;
    for (const char* content : {"\\u00c9a", "\\u4e2d\\u6587", "a\\u200bb", " x"})
      added += std::string("{\"id\": ") + std::to_string(id++) + ", \"content\": \"" + content +
               "\", \"single_word\": false, \"lstrip\": true, \"rstrip\": true, \"normalized\": true, "
               "\"special\": false},";
    edit("\"added_tokens\": [", added);
    return roberta::Tokenizer::from_tokenizer_json_text(json, "uncased");
  }();
  run(tok, data, size);
  run(wordpiece, data, size);
  run(uncased, data, size);
  return 0;
}
