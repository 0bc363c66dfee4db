// SentencePiece (Unigram) tokenizers against Hugging Face's: the Precompiled normalizer and its
// grapheme clusters, the Unigram model with Metaspace, XLM-RoBERTa's layout, byte fallback.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "hf_goldens.h"
#include "tokenizer/precompiled.h"
#include "roberta/tokenizer.h"
#include "sha256.h"
#include "test_util.h"
#include "tokenizer/unicode.h"

namespace {

using json = nlohmann::json;
using namespace roberta::test;
const std::string kHfData = std::string(ROBERTA_TEST_DATA) + "/hf/";

json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return json::parse(in);
}

std::string utf8(char32_t cp) {
  std::string s;
  roberta::unicode::append_utf8(s, cp);
  return s;
}

std::string normalized(const roberta::Precompiled& p, const std::string& text) {
  roberta::NormalizedText n;
  n.assign(text, 0, text.size());
  p.normalize(n, 0);
  return n.text;
}

// Which code points extend a grapheme ("a" + X one cluster) and which join the one after them
// (X + "a"), as HF's Precompiled normalizer sees them (gen_grapheme_goldens.py: a charsmap mapping
// "a" to "<" and every other code point but "<" and "[" to "["), for every code point; and longer
// sequences (emoji with ZWJ, Hangul, regional indicators, CR LF, conjuncts).
TEST(HfGoldens, PrecompiledGraphemesOfEveryCodePoint) {
  const json g = read_json(kHfData + "precompiled_graphemes.json");
  const roberta::Precompiled p(roberta::decode_base64(g["charsmap"].get<std::string>()));
  const auto in = [](const json& ranges, char32_t cp) {
    for (const json& r : ranges)
      if (cp >= r[0].get<char32_t>() && cp <= r[1].get<char32_t>()) return true;
    return false;
  };
  size_t extends = 0, prepends = 0, mismatches = 0;
  for (char32_t cp = 1; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const std::string x = utf8(cp);
    const std::string rule = cp == 'a' ? "<" : (cp == '<' || cp == '[') ? x : "[";
    const bool extend = in(g["extends"], cp), prepend = in(g["prepends"], cp);
    extends += extend, prepends += prepend;
    const std::string after = normalized(p, "a" + x), before = normalized(p, x + "a");
    if (after != (extend ? "<" : "<" + rule) || before != (prepend ? rule : rule + "<")) {
      if (++mismatches <= 20)
        ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(cp) << ": a+X gives " << after << ", X+a " << before;
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(extends, 2000u);
  EXPECT_GT(prepends, 20u);
  for (const json& s : g["sequences"])
    EXPECT_EQ(normalized(p, s["text"].get<std::string>()), s["normalized"].get<std::string>()) << s["text"].dump();
}

}  // namespace

namespace {

// The tokenizer.json files the records patch (tests/data/hf/<base>/tokenizer.json).
const json& base_tokenizer(const std::string& base) {
  static std::map<std::string, json> docs;
  if (!docs.count(base)) docs.emplace(base, read_json(kHfData + base + "/tokenizer.json"));
  return docs.at(base);
}

// A SentencePiece tokenizer.json as transformers' XLMRobertaConverter writes it (Precompiled nmt_nfkc,
// Strip, Replace; Metaspace; Unigram; <s> A </s></s> B </s>), one with byte fallback as the Llama
// converters write it, and their variants against HF (gen_unigram_goldens.js): prepend schemes,
// split, the 2020 layout (WhitespaceSplit), no normalizer, added tokens, unk_id null, the decoders;
// texts with NFKC forms, graphemes, unknown runs, spaces; pairs, truncation, decode.
TEST(HfGoldens, UnigramTokenizerAndVariants) {
  const auto records = read_jsonl(kHfData + "unigram.jsonl");
  ASSERT_GE(records.size(), 9000u);
  std::map<std::string, roberta::Tokenizer> variants;
  std::set<std::string> no_unk;  // variants whose model has no unknown token
  size_t load_errors = 0, errors = 0, decoded = 0, checked = 0, refused = 0;
  for (const json& r : records) {
    const std::string name = r["base"].get<std::string>() + "/" + r["variant"].get<std::string>();
    if (r.value("stage", "") == "load") {
      const std::string spec = patched(base_tokenizer(r["base"]), r["patch"]).dump();
      EXPECT_THROW(roberta::Tokenizer::from_tokenizer_json_text(spec, name), roberta::Error) << name;
      ++load_errors;
      continue;
    }
    if (!variants.count(name)) {
      const json spec = patched(base_tokenizer(r["base"]), r["patch"]);
      variants.emplace(name, roberta::Tokenizer::from_tokenizer_json_text(spec.dump(), name));
      if (spec["model"]["unk_id"].is_null()) no_unk.insert(name);
    }
    const roberta::Tokenizer& tok = variants.at(name);
    EXPECT_TRUE(tok.is_unigram()) << name;
    const roberta::EncodeOptions options = record_options(r);
    const RecordTexts texts = record_texts(name, r, options);
    const std::string &a = texts.a, &b = texts.b, &what = texts.what;
    if (r.contains("error")) {
      EXPECT_THROW(texts.encode(tok, options), roberta::Error) << what;
      ++errors;
      continue;
    }
    if (no_unk.count(name) && options.max_length > 0) {
      // A known difference: without an unknown token, a character the vocabulary lacks is an
      // error here even where HF's whole-word pre-cut stops before the word that holds it.
      try {
        texts.encode(tok, options);
      } catch (const roberta::Error& e) {
        EXPECT_NE(std::string(e.what()).find("no unknown token"), std::string::npos) << what;
        ++refused;
        continue;
      }
    }
    const roberta::Encoding e = expect_golden(tok, r, a, b, options, what);
    ++checked;
    decoded += expect_decode_and_ids(tok, r, texts, options, e);
  }
  EXPECT_GE(load_errors, 1u);
  EXPECT_GT(errors, 100u);
  EXPECT_GT(decoded, 1000u);
  EXPECT_GT(checked, 8000u);
  EXPECT_LT(refused, 100u);
  // hand-made id lists through the decoders (byte pieces making valid and invalid UTF-8, "▁" alone)
  size_t lists = 0;
  for (const json& r : read_jsonl(kHfData + "unigram_decode.jsonl")) {
    const std::string name = r["base"].get<std::string>() + "/" + r["variant"].get<std::string>();
    if (!variants.count(name))
      variants.emplace(name, roberta::Tokenizer::from_tokenizer_json_text(
                                 patched(base_tokenizer(r["base"]), r["patch"]).dump(), name));
    const auto ids = r["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(variants.at(name).decode(ids, r["skip_special_tokens"]), r["text"].get<std::string>())
        << name << " " << r["source"] << " " << r["ids"].dump();
    ++lists;
  }
  EXPECT_GT(lists, 200u);
}

// nmt_nfkc (XLM-RoBERTa's charsmap, as sentencepiece builds it) on every code point alone, and on
// longer strings with the original span of each normalized character, against HF's normalizer.
TEST(HfGoldens, PrecompiledNmtNfkcOfEveryCodePoint) {
  const json& doc = base_tokenizer("unigram");
  const roberta::Precompiled p(
      roberta::decode_base64(doc["normalizer"]["normalizers"][0]["precompiled_charsmap"].get<std::string>()));
  std::map<char32_t, std::string> changed;
  std::ifstream in(kHfData + "precompiled_nmt_nfkc_maps.txt");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string cp, hex;
    fields >> cp;
    std::string to;
    while (fields >> hex)
      if (hex != "-") to += utf8(static_cast<char32_t>(std::stoul(hex, nullptr, 16)));
    changed[static_cast<char32_t>(std::stoul(cp, nullptr, 16))] = to;
  }
  ASSERT_GT(changed.size(), 4000u);
  size_t mismatches = 0;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const std::string x = utf8(cp);
    const auto it = changed.find(cp);
    const std::string& want = it == changed.end() ? x : it->second;
    if (normalized(p, x) != want && ++mismatches <= 20)
      ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(cp) << " gives " << normalized(p, x);
  }
  EXPECT_EQ(mismatches, 0u);
  size_t strings = 0;
  for (const json& r : read_jsonl(kHfData + "precompiled_strings.jsonl")) {
    const std::string text = r["text"];
    roberta::NormalizedText n;
    n.assign(text, 0, text.size());
    p.normalize(n, 0);
    EXPECT_EQ(n.text, r["normalized"].get<std::string>()) << r["text"].dump();
    if (!r.contains("offsets")) continue;
    // each normalized character's original span, in code points
    std::vector<size_t> char_at(text.size() + 1, 0);
    for (size_t i = 0, c = 0; i <= text.size(); ++i) {
      if (i < text.size() && roberta::unicode::is_continuation_byte(text[i])) continue;
      char_at[i] = c++;
    }
    json spans = json::array();
    for (size_t i = 0; i < n.text.size(); ++i)
      if (!roberta::unicode::is_continuation_byte(n.text[i]))
        spans.push_back({char_at[n.source[i].first], char_at[n.source[i].second]});
    EXPECT_EQ(spans, r["offsets"]) << r["text"].dump();
    ++strings;
  }
  EXPECT_GT(strings, 50u);
}

// HF's id stream of every corpus file with the two tokenizers (gen_unigram_corpus_goldens.js);
// the byte-fallback one through encode_batch.
TEST(Corpus, UnigramIdStreamsEqualHuggingFace) {
  const json goldens = read_json(kHfData + "unigram_corpus.json");
  roberta::EncodeOptions options;
  options.add_special_tokens = false;
  for (const std::string base : {"unigram", "unigram_byte_fallback"}) {
    const roberta::Tokenizer tok = roberta::Tokenizer::from_tokenizer_json_text(base_tokenizer(base).dump(), base);
    for (const auto& [file, want] : goldens[base].items()) {
      std::ifstream in(std::string(ROBERTA_SHARED_DIR) + "/assets/corpus/" + file, std::ios::binary);
      ASSERT_TRUE(in) << file;
      std::vector<std::string> lines;
      for (std::string line; std::getline(in, line);) lines.push_back(line);
      Sha256 sha;
      size_t count = 0;
      if (base == "unigram") {
        std::vector<int32_t> ids;
        for (const std::string& line : lines) {
          ids.clear();
          tok.encode_ids(line, ids);
          count += ids.size();
          sha.update(ids.data(), ids.size() * sizeof(int32_t));  // little-endian int32 on x86-64
        }
      } else {
        for (const roberta::Encoding& e : tok.encode_batch(lines, options, 2)) {
          count += e.size();
          sha.update(e.ids.data(), e.ids.size() * sizeof(int32_t));
        }
      }
      EXPECT_EQ(count, want["tokens"].get<size_t>()) << base << " " << file;
      EXPECT_EQ(sha.hex_digest(), want["sha256"]) << base << " " << file;
    }
  }
}

}  // namespace

namespace {

// What a broken or unsupported SentencePiece tokenizer.json gives: an error naming the field.
TEST(UnigramLoaders, BadFilesGiveErrorsNamingThePlace) {
  const json base = base_tokenizer("unigram");
  const auto expect = [&](const std::string& pointer, const json& value, std::initializer_list<std::string> parts) {
    json d = base;
    d[json::json_pointer(pointer)] = value;
    roberta::test::expect_error([&] { roberta::Tokenizer::from_tokenizer_json_text(d.dump(), "x.json"); }, parts);
  };
  expect("/model/vocab/5", json::array({"a"}), {"x.json: model.vocab[5]", "[piece, score]"});
  expect("/model/unk_id", 5000, {"x.json: model.unk_id 5000", "vocabulary's size 2002"});
  expect("/model/unk_id", -1, {"x.json: model.unk_id", "non-negative"});
  expect("/normalizer/normalizers/0/precompiled_charsmap", "AAAAA", {"normalizers[0].precompiled_charsmap", "base64"});
  expect("/normalizer/normalizers/0/precompiled_charsmap", "QR==", {"precompiled_charsmap", "unused bits"});
  expect("/normalizer/normalizers/0/precompiled_charsmap", "/////w==", {"precompiled_charsmap", "trie size"});
  expect("/normalizer/normalizers/2/pattern", {{"Regex", "\\s+|x"}},
         {"normalizers[2].pattern", "\"\\s+|x\" is not supported"});
  expect("/normalizer/normalizers/1", {{"type", "NFKC"}}, {"normalizers[1] \"NFKC\" is not supported"});
  expect("/normalizer/normalizers/2/pattern", {{"String", ""}}, {"normalizers[2].pattern", "empty pattern"});
  expect("/normalizer/normalizers/2/pattern", {{"Regex", " {0,}"}}, {"normalizers[2].pattern", "not supported"});
  expect("/normalizer/normalizers/1", {{"type", "Prepend"}, {"prepend", ""}}, {"normalizers[1].prepend", "empty"});
  json deep = {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}};
  for (int i = 0; i < 9; ++i) deep = {{"type", "Sequence"}, {"normalizers", json::array({deep})}};
  expect("/normalizer", deep, {"nested more than 8 deep"});
  expect("/post_processor", {{"type", "RobertaProcessing"}, {"sep", {"</s>", 2}}, {"cls", {"<s>", 0}}},
         {"x.json: post_processor \"RobertaProcessing\" with trim_offsets", "Unigram"});
  expect("/pre_tokenizer", {{"type", "ByteLevel"}}, {"x.json: pre_tokenizer \"ByteLevel\"", "Metaspace"});
  expect("/pre_tokenizer", nullptr, {"x.json: pre_tokenizer is missing"});
  expect("/pre_tokenizer/replacement", "ab", {"pre_tokenizer.replacement", "one character"});
  expect("/pre_tokenizer/prepend_scheme", "sometimes", {"pre_tokenizer.prepend_scheme \"sometimes\""});
  expect("/decoder", {{"type", "Sequence"}, {"decoders", {{{"type", "CTC"}}}}}, {"decoder.decoders[0] \"CTC\""});
  expect("/decoder", {{"type", "Strip"}, {"content", " "}, {"start", -1}, {"stop", 0}},
         {"decoder.start", "non-negative"});
  // what loads: an escaped character as a Replace pattern, Sequences nested 8 deep
  json ok = base;
  ok["normalizer"]["normalizers"][2]["pattern"] = {{"Regex", "\\."}};
  json nested = ok["normalizer"];
  for (int i = 0; i < 7; ++i) nested = {{"type", "Sequence"}, {"normalizers", json::array({nested})}};
  ok["normalizer"] = nested;
  for (const std::string& t : roberta::Tokenizer::from_tokenizer_json_text(ok.dump(), "ok.json").encode("a. b").tokens)
    EXPECT_EQ(t.find('.'), std::string::npos) << t;  // (the pattern "\\." is the dot itself)
  // a folder with only the slow tokenizer's SentencePiece model
  roberta::test::TempDir dir;
  roberta::test::write_text(dir / "sentencepiece.bpe.model", "\x0a\x04\x0a\x02" "ab");
  roberta::test::expect_error([&] { roberta::Tokenizer::from_dir(dir.path()); },
                              {"sentencepiece.bpe.model", "no tokenizer.json", "save_pretrained"});
  // a character the vocabulary lacks, without an unknown token
  json d = base;
  d["model"]["unk_id"] = nullptr;
  const roberta::Tokenizer tok = roberta::Tokenizer::from_tokenizer_json_text(d.dump(), "x.json");
  roberta::test::expect_error([&] { tok.encode("snow \xE2\x9B\x84"); }, {"U+26C4", "no unknown token"});
}

}  // namespace

namespace {

// Base64 as spm_precompiled 0.1.4 (base64 0.13) decodes it: padding optional, unused bits zero.
TEST(Precompiled, Base64) {
  EXPECT_EQ(roberta::decode_base64("QUJD"), "ABC");
  EXPECT_EQ(roberta::decode_base64("QUI="), "AB");
  EXPECT_EQ(roberta::decode_base64("QUI"), "AB");
  EXPECT_EQ(roberta::decode_base64("QQ=="), "A");
  EXPECT_EQ(roberta::decode_base64("QQ"), "A");
  EXPECT_EQ(roberta::decode_base64(""), "");
  for (const char* bad : {"QR==", "QUJ=", "Q", "QUJDR", "QU=I", "QU!D", "QQ==="})
    EXPECT_THROW(roberta::decode_base64(bad), std::invalid_argument) << bad;
}

}  // namespace
