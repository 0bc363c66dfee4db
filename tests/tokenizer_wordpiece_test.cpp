// WordPiece (BERT-style) tokenizers against Hugging Face's: tokenizer.json and its variants, vocab.txt
// folders, and what BertNormalizer and BertPreTokenizer make of every code point.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/bert_normalizer.h"
#include "hf_goldens.h"
#include "roberta/tokenizer.h"
#include "test_util.h"
#include "tokenizer_test_util.h"
#include "tokenizer/unicode.h"

namespace {

using json = nlohmann::json;
using namespace roberta::test;

json wordpiece_base() {
  std::ifstream in(kHfData + "wordpiece/tokenizer.json");
  return json::parse(in);
}

// The base tokenizer's vocabulary as a BertTokenizer's vocab.txt in `dir`, line i ending in
// line_end(i), with a tokenizer_config.json that keeps case.
void write_vocab_txt(const std::filesystem::path& dir, const json& base,
                     const std::function<const char*(size_t)>& line_end) {
  std::vector<std::string> lines(base["model"]["vocab"].size());
  for (const auto& [token, id] : base["model"]["vocab"].items()) lines.at(id.get<size_t>()) = token;
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i) text += lines[i] + line_end(i);
  roberta::test::write_text(dir / "vocab.txt", text);
  roberta::test::write_text(dir / "tokenizer_config.json", R"({"do_lower_case": false})");
}

// The untruncated single texts of `variant`'s records, with special tokens, against `tok`.
void expect_variant(const std::vector<json>& records, const roberta::Tokenizer& tok, const std::string& variant,
                    const std::string& what) {
  size_t checked = 0;
  for (const json& r : records)
    if (r["variant"] == variant && r.contains("a") && r["b"].is_null() && r["truncation"].is_null() &&
        r["add_special_tokens"] && !r.contains("error")) {
      const roberta::Encoding e = tok.encode(r["a"].get<std::string>());
      EXPECT_EQ(diff_encoding(r, e), "") << what << " " << r["a"];
      ++checked;
    }
  EXPECT_GE(checked, 40u) << what;
}

// A BERT-style WordPiece tokenizer.json (some `model_type: roberta` checkpoints ship one) and its
// variants against HF (gen_wordpiece_goldens.js): BertNormalizer's clean_text and
// handle_chinese_chars, BertPreTokenizer, WordPiece with [UNK] for words it cannot cover or that are
// too long, the post-processors' layouts and type ids, truncation, offsets into the original text,
// decoding with the WordPiece decoder; the base also as transformers converts a BertTokenizer's
// vocab.txt (BertConverter).
TEST(HfGoldens, WordPieceTokenizerAndVariants) {
  const auto records = read_jsonl(kHfData + "wordpiece.jsonl");
  ASSERT_GE(records.size(), 3000u);
  const json base = wordpiece_base();
  std::map<std::string, roberta::Tokenizer> variants;
  roberta::test::TempDir txt_dir;
  write_vocab_txt(txt_dir.path(), base, [](size_t) -> const char* { return "\n"; });
  const roberta::Tokenizer from_txt = roberta::Tokenizer::from_dir(txt_dir.path());
  {  // Windows line ends (Python reads a \r\n or a lone \r as a line end)
    roberta::test::TempDir crlf;
    write_vocab_txt(crlf.path(), base, [](size_t i) -> const char* { return i % 2 ? "\r\n" : "\r"; });
    const std::string sample = "안녕하세요 서울은 한국의 수도입니다. The quick brown fox";
    EXPECT_EQ(roberta::Tokenizer::from_dir(crlf.path()).encode(sample).ids, from_txt.encode(sample).ids);
  }
  size_t errors = 0, decoded = 0, word_lists = 0, txt_checked = 0;
  for (const json& r : records) {
    const std::string name = r["variant"];
    if (!variants.count(name))
      variants.emplace(name, roberta::Tokenizer::from_tokenizer_json_text(patched(base, r["patch"]).dump(), name));
    const roberta::Tokenizer& tok = variants.at(name);
    EXPECT_TRUE(tok.is_wordpiece());
    const json spec = patched(base, r["patch"]);
    const json& normalizer = spec["normalizer"];
    const bool lower = !normalizer.is_null() && normalizer["lowercase"].get<bool>();
    EXPECT_EQ(tok.lowercases(), lower) << name;
    EXPECT_EQ(tok.strips_accents(), !normalizer.is_null() && (normalizer["strip_accents"].is_null()
                                                                  ? lower
                                                                  : normalizer["strip_accents"].get<bool>()))
        << name;
    const roberta::EncodeOptions options = record_options(r);
    if (r.contains("words")) {  // a list of words (or a pair of lists)
      const auto words = r["words"].get<std::vector<std::string>>();
      const bool pair = !r["pair_words"].is_null();
      const auto pair_words = pair ? r["pair_words"].get<std::vector<std::string>>() : std::vector<std::string>{};
      const std::string what = name + " " + r["words"].dump() + (pair ? " / " + r["pair_words"].dump() : "") +
                               r["truncation"].dump() + (options.add_special_tokens ? " with specials" : "");
      const roberta::Encoding e = pair ? tok.encode_words_pair(words, pair_words, options)
                                       : tok.encode_words(words, options);
      EXPECT_EQ(diff_encoding(r, e), "") << what;
      EXPECT_EQ(json(e.word_ids), r["word_ids"]) << what;
      ++word_lists;
      continue;
    }
    const RecordTexts texts = record_texts(name, r, options);
    const std::string &a = texts.a, &b = texts.b, &what = texts.what;
    if (r.contains("error")) {
      EXPECT_THROW(texts.encode(tok, options), roberta::Error) << what;
      ++errors;
      continue;
    }
    const roberta::Encoding e = expect_golden(tok, r, a, b, options, what);
    if (name == "base") {
      const roberta::Encoding t = expect_golden(from_txt, r, a, b, options, what + " (vocab.txt)");
      if (r.contains("decoded")) {
        EXPECT_EQ(from_txt.decode(t.ids, true), r["decoded_skip_special"].get<std::string>()) << what << " (vocab.txt)";
      }
      ++txt_checked;
    }
    decoded += expect_decode_and_ids(tok, r, texts, options, e);
  }
  EXPECT_GT(errors, 0u);
  EXPECT_GT(decoded, 800u);
  EXPECT_GE(word_lists, 32u);
  EXPECT_GE(txt_checked, 300u);
  // without a post-processor (or [CLS] / [SEP] in its layout), the vocabulary's [CLS] and [SEP]
  // still name bos / eos (transformers' cls_token_id / sep_token_id), and nothing is added
  EXPECT_EQ(variants.at("no_post_processor").bos_id(), base["model"]["vocab"]["[CLS]"].get<int32_t>());
  EXPECT_EQ(variants.at("other_template").bos_id(), base["model"]["vocab"]["[CLS]"].get<int32_t>());
  EXPECT_EQ(variants.at("other_template").eos_id(), base["model"]["vocab"]["[SEP]"].get<int32_t>());
  EXPECT_EQ(variants.at("no_post_processor").num_special_tokens_to_add(true), 0u);
  EXPECT_EQ(variants.at("other_template").num_special_tokens_to_add(true), 3u);
}

// tokenizer_class BertTokenizer: transformers rebuilds tokenizer.json's normalizer with the
// config's do_lower_case (true unless it says false: as the lowercase variant), strip_accents
// (null: follows do_lower_case) and tokenize_chinese_chars (false: as the no_chinese_chars variant).
// A vocab.txt's BertTokenizer lowercases (and strips accents) unless tokenizer_config.json says
// otherwise, as transformers' BertConverter builds it.
TEST(HfGoldens, WordPieceConfigsRebuildTheNormalizer) {
  const auto records = read_jsonl(kHfData + "wordpiece.jsonl");
  const json base = wordpiece_base();
  roberta::test::TempDir txt_dir;
  write_vocab_txt(txt_dir.path(), base, [](size_t) -> const char* { return "\n"; });
  const roberta::Tokenizer from_txt = roberta::Tokenizer::from_dir(txt_dir.path());
  roberta::test::TempDir bert_dir;
  roberta::test::write_text(bert_dir / "tokenizer.json", base.dump());
  roberta::test::write_text(bert_dir / "tokenizer_config.json", R"({"tokenizer_class": "BertTokenizer"})");
  expect_variant(records, roberta::Tokenizer::from_dir(bert_dir.path()), "lowercase", "BertTokenizer, no do_lower_case");
  roberta::test::write_text(bert_dir / "tokenizer_config.json",
                            R"({"tokenizer_class": "BertTokenizer", "strip_accents": false})");
  expect_variant(records, roberta::Tokenizer::from_dir(bert_dir.path()), "lowercase_keep_accents",
                 "BertTokenizer, strip_accents false");
  roberta::test::write_text(
      bert_dir / "tokenizer_config.json",
      R"({"tokenizer_class": "BertTokenizer", "do_lower_case": false, "tokenize_chinese_chars": false})");
  const roberta::Tokenizer no_chinese = roberta::Tokenizer::from_dir(bert_dir.path());
  expect_variant(records, no_chinese, "no_chinese_chars", "BertTokenizer, tokenize_chinese_chars false");
  EXPECT_NE(no_chinese.encode("日本語").ids, from_txt.encode("日本語").ids);
  EXPECT_EQ(from_txt.mask_id(), base["model"]["vocab"]["[MASK]"].get<int32_t>());
  EXPECT_EQ(from_txt.pad_id(), base["model"]["vocab"]["[PAD]"].get<int32_t>());
  roberta::test::write_text(txt_dir / "tokenizer_config.json", "{}");
  expect_variant(records, roberta::Tokenizer::from_dir(txt_dir.path()), "lowercase", "vocab.txt, no do_lower_case");
  roberta::test::write_text(txt_dir / "tokenizer_config.json", R"({"do_lower_case": false, "strip_accents": true})");
  expect_variant(records, roberta::Tokenizer::from_dir(txt_dir.path()), "strip_accents", "vocab.txt, strip_accents true");
  roberta::test::write_text(txt_dir / "tokenizer_config.json", R"({"do_lower_case": false, "cls_token": "<cls>"})");
  roberta::test::expect_error([&] { roberta::Tokenizer::from_dir(txt_dir.path()); },
                              {"vocab.txt", "special token \"<cls>\" is missing"});
  roberta::test::write_text(txt_dir / "tokenizer_config.json", R"({"do_lower_case": false, "mask_token": "<mask>"})");
  roberta::test::expect_error([&] { roberta::Tokenizer::from_dir(txt_dir.path()); },
                              {"vocab.txt", "special token \"<mask>\" is missing"});
  {  // ... unless added_tokens.json has it (as transformers saves a token add_special_tokens added)
    const size_t n = base["model"]["vocab"].size();
    roberta::test::write_text(txt_dir / "added_tokens.json", "{\"<mask>\": " + std::to_string(n) + "}");
    EXPECT_EQ(roberta::Tokenizer::from_dir(txt_dir.path()).mask_id(), static_cast<int32_t>(n));
    std::filesystem::remove(txt_dir / "added_tokens.json");
  }
}

// The same tokenizer from a model folder: the roles of its special tokens; the post-processor's
// counts (2 / 3 for BERT's layout).
TEST(HfGoldens, WordPieceFolderNamesItsSpecialTokens) {
  const json base = wordpiece_base();
  roberta::test::TempDir dir;
  roberta::test::write_text(dir / "tokenizer.json", base.dump());
  const roberta::Tokenizer folder = roberta::Tokenizer::from_dir(dir.path());
  EXPECT_EQ(folder.bos_id(), base["model"]["vocab"]["[CLS]"].get<int32_t>());
  EXPECT_EQ(folder.eos_id(), base["model"]["vocab"]["[SEP]"].get<int32_t>());
  EXPECT_EQ(folder.pad_id(), base["model"]["vocab"]["[PAD]"].get<int32_t>());
  EXPECT_EQ(folder.mask_id(), base["model"]["vocab"]["[MASK]"].get<int32_t>());
  EXPECT_EQ(folder.unk_id(), base["model"]["vocab"]["[UNK]"].get<int32_t>());
  EXPECT_EQ(folder.num_special_tokens_to_add(false), 2u);
  EXPECT_EQ(folder.num_special_tokens_to_add(true), 3u);
  // tokenizer_config.json names the roles; special_tokens_map.json's names replace its names.
  roberta::test::write_text(dir / "tokenizer_config.json", R"({"mask_token": "[UNK]", "pad_token": "[SEP]"})");
  roberta::test::write_text(dir / "special_tokens_map.json", R"({"mask_token": {"content": "[CLS]"}})");
  const roberta::Tokenizer named = roberta::Tokenizer::from_dir(dir.path());
  EXPECT_EQ(named.mask_id(), base["model"]["vocab"]["[CLS]"].get<int32_t>());
  EXPECT_EQ(named.pad_id(), base["model"]["vocab"]["[SEP]"].get<int32_t>());
  // a config written by transformers 4.34+ (with added_tokens_decoder) holds the tokens: the map is not read
  roberta::test::write_text(dir / "tokenizer_config.json",
                            R"({"mask_token": "[UNK]", "pad_token": "[SEP]", "added_tokens_decoder": {}})");
  EXPECT_EQ(roberta::Tokenizer::from_dir(dir.path()).mask_id(), base["model"]["vocab"]["[UNK]"].get<int32_t>());
  roberta::test::write_text(dir / "tokenizer_config.json", "{}");
  roberta::test::write_text(dir / "special_tokens_map.json", R"({"mask_token": 3})");
  try {
    (void)roberta::Tokenizer::from_dir(dir.path());
    ADD_FAILURE() << "a mask_token that is not a token loaded";
  } catch (const roberta::Error& e) {
    EXPECT_NE(std::string(e.what()).find("special_tokens_map.json: field \"mask_token\""), std::string::npos)
        << e.what();
  }
}

// What BertNormalizer (clean_text, handle_chinese_chars) and BertPreTokenizer do with every code
// point, as HF does it (bert_char_classes.txt, measured on HF's tokenizer by
// gen_wordpiece_goldens.js): removed, white space, a word of its own (punctuation; CJK ideographs
// with handle_chinese_chars), or part of a word.
TEST(HfGoldens, BertCharacterClassesOfEveryCodePoint) {
  std::ifstream in(kHfData + "bert_char_classes.txt");
  ASSERT_TRUE(in);
  std::vector<char> want(0x110000, 'K');
  size_t ranges = 0;
  for (std::string first, last, kind; in >> first >> last >> kind; ++ranges)
    for (uint32_t c = std::stoul(first, nullptr, 16); c <= std::stoul(last, nullptr, 16); ++c) want[c] = kind[0];
  ASSERT_GT(ranges, 100u);
  size_t mismatches = 0;
  for (char32_t c = 0; c < 0x110000; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    namespace u = roberta::unicode;
    const char got = (c == 0 || c == 0xFFFD || u::is_bert_control(c)) ? 'R'
                     : u::is_whitespace(c)                             ? 'W'
                     : u::is_bert_punctuation(c)                       ? 'P'
                     : u::is_chinese_char(c)                           ? 'C'
                                                                       : 'K';
    if (got != want[c] && ++mismatches <= 20)
      ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(c) << ": HF " << want[c] << ", ours " << got;
  }
  EXPECT_EQ(mismatches, 0u);
}

// What BertNormalizer's lowercase and strip_accents, each alone, make of every code point, against
// HF's normalizer (bert_normalizer_maps.txt, gen_wordpiece_goldens.js): Rust's char::to_lowercase
// (Unicode 17.0), and NFD (Unicode 9.0) without the non-spacing marks (Unicode 8.0's Mn).
TEST(HfGoldens, BertLowercaseAndStripAccentsOfEveryCodePoint) {
  std::ifstream in(kHfData + "bert_normalizer_maps.txt");
  ASSERT_TRUE(in);
  std::map<std::pair<char32_t, char>, std::u32string> want;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string cp, kind, to;
    fields >> cp >> kind;
    std::u32string& mapped = want[{static_cast<char32_t>(std::stoul(cp, nullptr, 16)), kind[0]}];
    while (fields >> to) mapped += static_cast<char32_t>(std::stoul(to, nullptr, 16));
  }
  ASSERT_GT(want.size(), 15000u);  // 1,488 lowercase mappings, 14,781 decompositions and marks
  size_t mismatches = 0, changed = 0;
  std::vector<roberta::NormalizedChar> out;
  for (char32_t c = 0; c < 0x110000; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    for (const char kind : {'L', 'S'}) {
      roberta::normalize_bert({{c, 10, 14}}, kind == 'S', kind == 'L', out);
      std::u32string got;
      for (const roberta::NormalizedChar& n : out) {
        got += n.cp;
        if (n.begin != 10 || n.end != 14) ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(c) << " span";
      }
      const auto it = want.find({c, kind});
      const std::u32string expected = it == want.end() ? std::u32string(1, c) : it->second;
      changed += got != std::u32string(1, c);
      if (got != expected && ++mismatches <= 20)
        ADD_FAILURE() << kind << " U+" << std::hex << static_cast<uint32_t>(c) << ": HF has " << expected.size()
                      << " code points, ours " << got.size() << (got.empty() ? "" : ", first U+")
                      << (got.empty() ? 0u : static_cast<uint32_t>(got[0]));
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(changed, want.size());
}

}  // namespace
