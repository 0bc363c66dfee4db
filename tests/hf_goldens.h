#pragma once
// Reading Hugging Face golden records (tests/data/hf, tools/hf_goldens) and comparing our
// encodings with them; shared by the tokenizer test files.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "roberta/tokenizer.h"

namespace roberta::test {

using json = nlohmann::json;

inline std::vector<json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::vector<json> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

inline json offsets_json(const std::vector<roberta::Offsets>& offsets) {
  json out = json::array();
  for (const auto& [s, e] : offsets) out.push_back({s, e});
  return out;
}


// Compares every field an HF record holds with our encoding; returns "" when equal.
inline std::string diff_encoding(const json& want, const roberta::Encoding& e) {
  std::string out;
  const auto check = [&](const char* key, const json& got) {
    if (want.contains(key) && want[key] != got)
      out += std::string("\n  ") + key + " expected " + want[key].dump() + "\n  " + std::string(strlen(key), ' ') +
             "      got " + got.dump();
  };
  std::vector<int> special(e.special_tokens_mask.begin(), e.special_tokens_mask.end());
  std::vector<int> attention(e.attention_mask.begin(), e.attention_mask.end());
  std::vector<int> sequence(e.sequence_ids.begin(), e.sequence_ids.end());
  check("ids", e.ids);
  check("tokens", e.tokens);
  check("offsets", offsets_json(e.offsets));
  check("type_ids", e.type_ids);
  check("special_tokens_mask", special);
  check("attention_mask", attention);
  check("sequence_ids", sequence);
  return out;
}

// Token t's byte offsets are its code-point offsets converted in `text` (its text or word).
inline void expect_byte_offsets(const roberta::Encoding& e, size_t t, const std::string& text,
                                const std::string& what) {
  std::vector<int64_t> byte_of_char;
  for (size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) byte_of_char.push_back(static_cast<int64_t>(i));
  byte_of_char.push_back(static_cast<int64_t>(text.size()));
  const auto [start, end] = e.offsets[t];
  EXPECT_EQ(e.byte_offsets[t], roberta::Offsets(byte_of_char.at(start), byte_of_char.at(end)))
      << what << " token " << t;
}

// Encodes text `a` (with `b`, a pair, where the record has one) and checks the encoding, its word
// ids and every text token's byte offsets against golden record `r`.
inline roberta::Encoding expect_golden(const roberta::Tokenizer& tok, const json& r, const std::string& a,
                                       const std::string& b, const roberta::EncodeOptions& options,
                                       const std::string& what) {
  const bool pair = !r["b"].is_null();
  const roberta::Encoding e = pair ? tok.encode_pair(a, b, options) : tok.encode(a, options);
  EXPECT_EQ(diff_encoding(r, e), "") << what;
  EXPECT_EQ(json(e.word_ids), r["word_ids"]) << what;
  for (size_t t = 0; t < e.size(); ++t)
    if (!e.special_tokens_mask[t]) expect_byte_offsets(e, t, e.sequence_ids[t] == 1 ? b : a, what);
  return e;
}

// A golden record's texts: `a`, and `b` when it is a pair (else empty); `what` names the record in
// failure messages (its variant `name`, texts, truncation, special tokens).
struct RecordTexts {
  std::string a, b, what;
  bool pair = false;
  roberta::Encoding encode(const roberta::Tokenizer& tok, const roberta::EncodeOptions& options) const {
    return pair ? tok.encode_pair(a, b, options) : tok.encode(a, options);
  }
};
inline RecordTexts record_texts(const std::string& name, const json& r, const roberta::EncodeOptions& options) {
  RecordTexts t;
  t.a = r["a"].get<std::string>();
  t.pair = !r["b"].is_null();
  if (t.pair) t.b = r["b"].get<std::string>();
  t.what = name + " " + r["a"].dump() + (t.pair ? " / " + r["b"].dump() : "") + " " + r["truncation"].dump() +
           (options.add_special_tokens ? " with specials" : "");
  return t;
}

// The record's decode of encoding `e` (with and without special tokens, where it has them) and,
// for a single text without special tokens or truncation, encode_ids' ids; returns whether the
// record had decoded texts.
inline bool expect_decode_and_ids(const roberta::Tokenizer& tok, const json& r, const RecordTexts& t,
                                  const roberta::EncodeOptions& options, const roberta::Encoding& e) {
  if (!t.pair && !options.add_special_tokens && options.max_length == 0) {  // the ids-only path
    std::vector<int32_t> ids;
    tok.encode_ids(t.a, ids);
    EXPECT_EQ(ids, e.ids) << t.what;
  }
  if (!r.contains("decoded")) return false;
  EXPECT_EQ(tok.decode(e.ids, false), r["decoded"].get<std::string>()) << t.what;
  EXPECT_EQ(tok.decode(e.ids, true), r["decoded_skip_special"].get<std::string>()) << t.what;
  return true;
}

// A golden record's variant: tokenizer.json `doc` with the record's patch applied (JSON pointer,
// value; a final "-" appends to an array, as nlohmann's pointers do).
inline json patched(json doc, const json& patch) {
  for (const json& p : patch) doc[json::json_pointer(p[0].get<std::string>())] = p[1];
  return doc;
}

// The encode options a golden record asks for: special tokens, truncation (strategy, side).
inline roberta::EncodeOptions record_options(const json& r) {
  roberta::EncodeOptions options;
  options.add_special_tokens = r["add_special_tokens"];
  if (const json& t = r["truncation"]; !t.is_null()) {
    options.max_length = t["max_length"];
    options.truncation = t["strategy"] == "only_first"    ? roberta::TruncationStrategy::kOnlyFirst
                         : t["strategy"] == "only_second" ? roberta::TruncationStrategy::kOnlySecond
                                                          : roberta::TruncationStrategy::kLongestFirst;
    options.truncation_side = t["direction"] == "left" ? roberta::Side::kLeft : roberta::Side::kRight;
  }
  return options;
}

}  // namespace roberta::test
