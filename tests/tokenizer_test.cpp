// Tokenizer tests against Hugging Face's output (golden files made with HF's Rust tokenizer).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>

#include "roberta/tokenizer.h"
#include "bert_normalizer.h"
#include "hf_goldens.h"
#include "test_hooks.h"
#include "test_util.h"
#include "unicode.h"

namespace {

using json = nlohmann::json;
using namespace roberta::test;
const std::string kShared = ROBERTA_SHARED_DIR;
const std::string kTokenizerDir = kShared + "/assets/roberta-base-tokenizer";

const roberta::Tokenizer& tokenizer_json() {
  static const roberta::Tokenizer tok = roberta::Tokenizer::from_tokenizer_json(kTokenizerDir + "/tokenizer.json");
  return tok;
}
const roberta::Tokenizer& tokenizer_vocab_merges() {
  static const roberta::Tokenizer tok =
      roberta::Tokenizer::from_vocab_merges(kTokenizerDir + "/vocab.json", kTokenizerDir + "/merges.txt");
  return tok;
}

class GoldenCases : public ::testing::TestWithParam<const roberta::Tokenizer* (*)()> {};

TEST_P(GoldenCases, IdsTokensAndOffsetsEqualHuggingFace) {
  const roberta::Tokenizer& tok = *GetParam()();
  const auto cases = read_jsonl(kShared + "/assets/tokenizer-cases.expected.jsonl");
  ASSERT_EQ(cases.size(), 351u);
  int failures = 0;
  for (const json& c : cases) {
    const std::string text = c["text"];
    const roberta::Encoding e = tok.encode(text);
    const bool ok = json(e.ids) == c["ids"] && json(e.tokens) == c["tokens"] && offsets_json(e.offsets) == c["offsets"];
    if (!ok && ++failures <= 10) {
      ADD_FAILURE() << c["source"] << " " << c["index"] << " " << json(text).dump() << "\n expected ids "
                    << c["ids"].dump() << "\n      got ids " << json(e.ids).dump() << "\n expected tokens "
                    << c["tokens"].dump() << "\n      got tokens " << json(e.tokens).dump()
                    << "\n expected offsets " << c["offsets"].dump() << "\n      got offsets "
                    << offsets_json(e.offsets).dump();
    }
  }
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Loaders, GoldenCases,
                         ::testing::Values(+[]() { return &tokenizer_json(); },
                                           +[]() { return &tokenizer_vocab_merges(); }));

}  // namespace

#include "sha256.h"

namespace {

struct CorpusFile {
  const char* name;
  size_t tokens;
  const char* sha256;
};
// From ../shared/assets/corpus/SOURCES.md (HF's Rust tokenizer, one line at a time, no specials).
constexpr CorpusFile kCorpus[] = {
    {"fiction.txt", 8929374, "e305456db467365b37f396f2e655a249afd3ba842e1df78817085c2f5ee1a154"},
    {"nonfiction.txt", 1549271, "8b5af581e6d8f87c111221773497ba1bdd6765b11986473d56837b61134ecdff"},
    {"drama-poetry.txt", 1021477, "dc52e05a31c33f71e880beddf87c0bb63f270ac51a7a003f5044383337c82fff"},
};

std::vector<std::string> corpus_lines(const std::string& name) {
  std::ifstream in(kShared + "/assets/corpus/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Corpus, IdStreamOfEveryFileEqualsHuggingFace) {
  const roberta::Tokenizer& tok = tokenizer_json();
  for (const CorpusFile& file : kCorpus) {
    roberta::test::Sha256 sha;
    size_t count = 0;
    std::vector<int32_t> ids;
    for (const std::string& line : corpus_lines(file.name)) {
      ids.clear();
      tok.encode_ids(line, ids);
      count += ids.size();
      sha.update(ids.data(), ids.size() * sizeof(int32_t));  // little-endian int32 on x86-64
    }
    EXPECT_EQ(count, file.tokens) << file.name;
    EXPECT_EQ(sha.hex_digest(), file.sha256) << file.name;
  }
}

// An uncased WordPiece tokenizer trained on the corpus by HF's trainer (tests/data/hf/wordpiece_corpus,
// gen_wordpiece_corpus_goldens.js): HF's id stream of every file, with the tokenizer as it is
// (lowercase, strip_accents) and with lowercase false; the second through encode_batch.
TEST(Corpus, WordPieceIdStreamsEqualHuggingFace) {
  const std::string dir = std::string(ROBERTA_TEST_DATA) + "/hf/";
  std::ifstream in(dir + "wordpiece_corpus.json");
  const json goldens = json::parse(in);
  std::ifstream tj(dir + "wordpiece_corpus/tokenizer.json");
  json doc = json::parse(tj);
  const roberta::Tokenizer uncased = roberta::Tokenizer::from_tokenizer_json_text(doc.dump(), "uncased");
  doc["normalizer"]["lowercase"] = false;
  const roberta::Tokenizer cased = roberta::Tokenizer::from_tokenizer_json_text(doc.dump(), "cased");
  roberta::EncodeOptions options;
  options.add_special_tokens = false;
  for (const CorpusFile& file : kCorpus) {
    const auto lines = corpus_lines(file.name);
    roberta::test::Sha256 sha;
    size_t count = 0;
    std::vector<int32_t> ids;
    for (const std::string& line : lines) {
      ids.clear();
      uncased.encode_ids(line, ids);
      count += ids.size();
      sha.update(ids.data(), ids.size() * sizeof(int32_t));  // little-endian int32 on x86-64
    }
    EXPECT_EQ(count, goldens["uncased"][file.name]["tokens"].get<size_t>()) << file.name;
    EXPECT_EQ(sha.hex_digest(), goldens["uncased"][file.name]["sha256"]) << file.name;
    roberta::test::Sha256 cased_sha;
    count = 0;
    for (const roberta::Encoding& e : cased.encode_batch(lines, options, 2)) {
      count += e.size();
      cased_sha.update(e.ids.data(), e.ids.size() * sizeof(int32_t));
    }
    EXPECT_EQ(count, goldens["cased"][file.name]["tokens"].get<size_t>()) << file.name;
    EXPECT_EQ(cased_sha.hex_digest(), goldens["cased"][file.name]["sha256"]) << file.name;
  }
}

TEST(Corpus, FullEncodeInBatchesEqualsHuggingFace) {
  const CorpusFile& file = kCorpus[2];
  const auto lines = corpus_lines(file.name);
  roberta::EncodeOptions options;
  options.add_special_tokens = false;
  const auto encodings = tokenizer_vocab_merges().encode_batch(lines, options, 2);
  ASSERT_EQ(encodings.size(), lines.size());
  roberta::test::Sha256 sha;
  size_t count = 0;
  for (const auto& e : encodings) {
    count += e.size();
    sha.update(e.ids.data(), e.ids.size() * sizeof(int32_t));
  }
  EXPECT_EQ(count, file.tokens);
  EXPECT_EQ(sha.hex_digest(), file.sha256);
}

}  // namespace

// ---------------------------------------------------------------- HF goldens: pairs, truncation,
// padding, decode and added tokens (tests/data/hf, made by tools/hf_goldens/gen_tokenizer_goldens.sh)

namespace {

const std::string kHfData = std::string(ROBERTA_TEST_DATA) + "/hf/";

roberta::Encoding encode_record(const json& r, const roberta::EncodeOptions& options) {
  const auto& tok = tokenizer_json();
  if (r.contains("b") && !r["b"].is_null()) return tok.encode_pair(r["a"].get<std::string>(), r["b"].get<std::string>(), options);
  return tok.encode(r.contains("a") ? r["a"].get<std::string>() : r["text"].get<std::string>(), options);
}

TEST(HfGoldens, Pairs) {
  const auto records = read_jsonl(kHfData + "pairs.jsonl");
  ASSERT_GE(records.size(), 50u);
  for (const json& r : records) {
    const std::string d = diff_encoding(r, encode_record(r, {}));
    EXPECT_EQ(d, "") << "pair " << r["a"].dump() << " / " << r["b"].dump();
  }
}

TEST(HfGoldens, AddedTokensNextToWhitespace) {
  const auto records = read_jsonl(kHfData + "added_tokens.jsonl");
  ASSERT_GE(records.size(), 20u);
  for (const json& r : records) {
    roberta::EncodeOptions options;
    options.add_special_tokens = r.value("add_special_tokens", true);
    const std::string d = diff_encoding(r, encode_record(r, options));
    EXPECT_EQ(d, "") << r["text"].dump() << " (" << r.value("note", "") << ")";
  }
}

TEST(HfGoldens, Truncation) {
  const auto records = read_jsonl(kHfData + "truncation.jsonl");
  ASSERT_GE(records.size(), 1000u);
  size_t compared = 0, refused = 0;
  for (const json& r : records) {
    roberta::EncodeOptions options;
    options.add_special_tokens = r["add_special_tokens"];
    options.max_length = r["max_length"];
    const std::string strategy = r["strategy"];
    options.truncation = strategy == "longest_first" ? roberta::TruncationStrategy::kLongestFirst
                         : strategy == "only_first"  ? roberta::TruncationStrategy::kOnlyFirst
                                                     : roberta::TruncationStrategy::kOnlySecond;
    options.truncation_side = r["direction"] == "left" ? roberta::Side::kLeft : roberta::Side::kRight;
    const std::string what = r["a"].dump() + " / " + r["b"].dump() + " max_length " + r["max_length"].dump() + " " +
                             strategy + " " + r["direction"].get<std::string>() +
                             (options.add_special_tokens ? " with specials" : " without specials");
    if (options.max_length == 0) continue;  // 0 means "no truncation" in our API
    if (r.value("below_special_count", false) && options.add_special_tokens) {
      // HF silently keeps a token or more here; we refuse: max_length cannot hold the specials.
      EXPECT_THROW(encode_record(r, options), roberta::Error) << what;
      ++refused;
      continue;
    }
    if (!r["error"].is_null()) {
      EXPECT_THROW(encode_record(r, options), roberta::Error) << what << " (HF: " << r["error"] << ")";
      continue;
    }
    try {
      EXPECT_EQ(diff_encoding(r, encode_record(r, options)), "") << what;
    } catch (const roberta::Error& e) {
      ADD_FAILURE() << what << ": " << e.what();
    }
    ++compared;
  }
  EXPECT_GT(compared, 1000u);
  EXPECT_GT(refused, 0u);
}

TEST(HfGoldens, Padding) {
  const auto records = read_jsonl(kHfData + "padding.jsonl");
  ASSERT_GE(records.size(), 50u);
  const auto& tok = tokenizer_json();
  for (const json& r : records) {
    roberta::EncodeOptions options;
    if (!r["truncation"].is_null()) options.max_length = r["truncation"];
    std::vector<roberta::Encoding> batch;
    if (!r["texts"].is_null())
      for (const auto& t : r["texts"]) batch.push_back(tok.encode(t.get<std::string>(), options));
    else
      for (const auto& p : r["pairs"]) batch.push_back(tok.encode_pair(p[0].get<std::string>(), p[1].get<std::string>(), options));
    roberta::PaddingOptions padding;
    if (r["padding"] == "fixed") padding.length = r["max_length"];
    if (!r["pad_to_multiple_of"].is_null()) padding.multiple_of = r["pad_to_multiple_of"];
    padding.side = r["direction"] == "left" ? roberta::Side::kLeft : roberta::Side::kRight;
    tok.pad(batch, padding);
    ASSERT_EQ(batch.size(), r["ids"].size());
    for (size_t i = 0; i < batch.size(); ++i) {
      json want;
      for (const char* key : {"ids", "tokens", "offsets", "type_ids", "special_tokens_mask", "attention_mask", "sequence_ids"})
        want[key] = r[key][i];
      EXPECT_EQ(diff_encoding(want, batch[i]), "") << r.dump().substr(0, 300) << " item " << i;
    }
  }
}

TEST(HfGoldens, Decode) {
  const auto records = read_jsonl(kHfData + "decode.jsonl");
  ASSERT_GE(records.size(), 700u);
  for (const json& r : records) {
    const std::vector<int32_t> ids = r["ids"];
    EXPECT_EQ(tokenizer_json().decode(ids, r["skip_special_tokens"]), r["text"].get<std::string>())
        << r["ids"].dump() << " skip_special_tokens=" << r["skip_special_tokens"];
  }
}

}  // namespace

namespace {

// Byte offsets are the code-point offsets measured in UTF-8 bytes (HF's char offsets always fall
// on character boundaries, so converting them must give ours exactly).
// Variants of the roberta-base tokenizer.json that checkpoints use (add_prefix_space on, in the
// pre-tokenizer only, a ByteLevel or no post-processor), against HF (gen_variant_goldens.js): the
// prefix space's offsets, trimming after (left) truncation, word ids after the pre-cut, a pair's
// type ids without RobertaProcessing; byte offsets are the code-point offsets in bytes.
TEST(HfGoldens, TokenizerJsonVariants) {
  const auto records = read_jsonl(kHfData + "variants.jsonl");
  ASSERT_GE(records.size(), 500u);
  std::ifstream in(kShared + "/assets/roberta-base-tokenizer/tokenizer.json");
  const json base = json::parse(in);
  // Model folders that transformers reads as the same tokenizer: tokenizer_config.json's
  // add_prefix_space over a tokenizer.json or vocab.json + merges.txt, added_tokens.json beside them.
  roberta::test::TempDir dir;
  const std::string assets = kShared + "/assets/roberta-base-tokenizer/";
  const auto folder = [&](const std::string& name, std::vector<std::string> files,
                          std::map<std::string, std::string> texts) {
    std::filesystem::create_directories(dir / name);
    for (const auto& f : files) std::filesystem::copy_file(assets + f, dir / name / f);
    for (const auto& [f, text] : texts) roberta::test::write_text(dir / name / f, text);
    return roberta::Tokenizer::from_dir(dir / name);
  };
  std::multimap<std::string, std::pair<std::string, roberta::Tokenizer>> folders;
  folders.emplace("aps", std::pair("vocab.json + merges.txt + tokenizer_config.json",
                                   folder("vm", {"vocab.json", "merges.txt"},
                                          {{"tokenizer_config.json", R"({"add_prefix_space": true})"}})));
  folders.emplace("aps", std::pair("tokenizer.json + tokenizer_config.json",
                                   folder("tj", {"tokenizer.json"},
                                          {{"tokenizer_config.json", R"({"add_prefix_space": true})"}})));
  folders.emplace("added_new", std::pair("vocab.json + merges.txt + added_tokens.json",
                                         folder("added", {"vocab.json", "merges.txt"},
                                                {{"added_tokens.json", R"({"<new_tok>": 50265})"}})));
  std::map<std::string, roberta::Tokenizer> variants;
  for (const json& r : records) {
    // windows: tests/pipelines_test.cpp; the file's truncation / padding: python/tests/test_tokenizer.py
    if (r.contains("windows_of") || r.contains("file_settings")) continue;
    const std::string name = r["variant"];
    if (!variants.count(name))
      variants.emplace(name, roberta::Tokenizer::from_tokenizer_json_text(patched(base, r["patch"]).dump(), name));
    std::vector<std::pair<std::string, const roberta::Tokenizer*>> tokenizers{
        {"patched tokenizer.json", &variants.at(name)}};
    for (auto [it, end] = folders.equal_range(name); it != end; ++it)
      tokenizers.emplace_back(it->second.first, &it->second.second);
    for (const auto& [source, tok_ptr] : tokenizers) {
      const roberta::Tokenizer& tok = *tok_ptr;
      const roberta::EncodeOptions options = record_options(r);
      const std::string a = r["a"];
      const bool pair = !r["b"].is_null();
      const std::string b = pair ? r["b"].get<std::string>() : "";
      const std::string what = name + " (" + source + ") " + r["a"].dump() + (pair ? " / " + r["b"].dump() : "") + " " +
                               r["truncation"].dump() + (options.add_special_tokens ? " with specials" : "");
      if (r["below_special_count"].get<bool>()) {  // HF keeps a token or more; we refuse, as in Truncation
        EXPECT_THROW(pair ? tok.encode_pair(a, b, options) : tok.encode(a, options), roberta::Error) << what;
        continue;
      }
      expect_golden(tok, r, a, b, options, what);
    }
  }
}

// A BERT-style WordPiece tokenizer.json (some `model_type: roberta` checkpoints ship one) and its
// variants against HF (gen_wordpiece_goldens.js): BertNormalizer's clean_text and
// handle_chinese_chars, BertPreTokenizer, WordPiece with [UNK] for words it cannot cover or that are
// too long, the post-processors' layouts and type ids, truncation, offsets into the original text,
// decoding with the WordPiece decoder; from the file and from a model folder.
TEST(HfGoldens, WordPieceTokenizerAndVariants) {
  const auto records = read_jsonl(kHfData + "wordpiece.jsonl");
  ASSERT_GE(records.size(), 3000u);
  std::ifstream in(kHfData + "wordpiece/tokenizer.json");
  const json base = json::parse(in);
  std::map<std::string, roberta::Tokenizer> variants;
  // The base tokenizer as transformers converts a BertTokenizer's vocab.txt (BertConverter) too.
  roberta::test::TempDir txt_dir;
  {
    std::vector<std::string> lines(base["model"]["vocab"].size());
    for (const auto& [token, id] : base["model"]["vocab"].items()) lines.at(id.get<size_t>()) = token;
    std::string vocab_txt;
    for (const std::string& line : lines) vocab_txt += line + "\n";
    roberta::test::write_text(txt_dir / "vocab.txt", vocab_txt);
    roberta::test::write_text(txt_dir / "tokenizer_config.json", R"({"do_lower_case": false})");
  }
  const roberta::Tokenizer from_txt = roberta::Tokenizer::from_dir(txt_dir.path());
  {  // Windows line ends (Python reads a \r\n or a lone \r as a line end)
    roberta::test::TempDir crlf;
    std::string text;
    std::vector<std::string> lines(base["model"]["vocab"].size());
    for (const auto& [token, id] : base["model"]["vocab"].items()) lines.at(id.get<size_t>()) = token;
    for (size_t i = 0; i < lines.size(); ++i) text += lines[i] + (i % 2 ? "\r\n" : "\r");
    roberta::test::write_text(crlf / "vocab.txt", text);
    roberta::test::write_text(crlf / "tokenizer_config.json", R"({"do_lower_case": false})");
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
  // The untruncated single texts of a variant, with special tokens, against another tokenizer.
  const auto expect_variant = [&](const roberta::Tokenizer& tok, const std::string& variant, const std::string& what) {
    size_t checked = 0;
    for (const json& r : records)
      if (r["variant"] == variant && r.contains("a") && r["b"].is_null() && r["truncation"].is_null() &&
          r["add_special_tokens"] && !r.contains("error")) {
        const roberta::Encoding e = tok.encode(r["a"].get<std::string>());
        EXPECT_EQ(diff_encoding(r, e), "") << what << " " << r["a"];
        ++checked;
      }
    EXPECT_GE(checked, 40u) << what;
  };
  // tokenizer_class BertTokenizer: transformers rebuilds tokenizer.json's normalizer with the
  // config's do_lower_case (true unless it says false: as the lowercase variant), strip_accents
  // (null: follows do_lower_case) and tokenize_chinese_chars (false: as the no_chinese_chars variant).
  roberta::test::TempDir bert_dir;
  roberta::test::write_text(bert_dir / "tokenizer.json", base.dump());
  roberta::test::write_text(bert_dir / "tokenizer_config.json", R"({"tokenizer_class": "BertTokenizer"})");
  expect_variant(roberta::Tokenizer::from_dir(bert_dir.path()), "lowercase", "BertTokenizer, no do_lower_case");
  roberta::test::write_text(bert_dir / "tokenizer_config.json",
                            R"({"tokenizer_class": "BertTokenizer", "strip_accents": false})");
  expect_variant(roberta::Tokenizer::from_dir(bert_dir.path()), "lowercase_keep_accents",
                 "BertTokenizer, strip_accents false");
  roberta::test::write_text(
      bert_dir / "tokenizer_config.json",
      R"({"tokenizer_class": "BertTokenizer", "do_lower_case": false, "tokenize_chinese_chars": false})");
  const roberta::Tokenizer no_chinese = roberta::Tokenizer::from_dir(bert_dir.path());
  expect_variant(no_chinese, "no_chinese_chars", "BertTokenizer, tokenize_chinese_chars false");
  EXPECT_NE(no_chinese.encode("日本語").ids, from_txt.encode("日本語").ids);
  EXPECT_EQ(from_txt.mask_id(), base["model"]["vocab"]["[MASK]"].get<int32_t>());
  EXPECT_EQ(from_txt.pad_id(), base["model"]["vocab"]["[PAD]"].get<int32_t>());
  // A vocab.txt's BertTokenizer lowercases (and strips accents) unless tokenizer_config.json says
  // otherwise, as transformers' BertConverter builds it.
  roberta::test::write_text(txt_dir / "tokenizer_config.json", "{}");
  expect_variant(roberta::Tokenizer::from_dir(txt_dir.path()), "lowercase", "vocab.txt, no do_lower_case");
  roberta::test::write_text(txt_dir / "tokenizer_config.json", R"({"do_lower_case": false, "strip_accents": true})");
  expect_variant(roberta::Tokenizer::from_dir(txt_dir.path()), "strip_accents", "vocab.txt, strip_accents true");
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
  // The same tokenizer from a model folder: the roles of its special tokens; the post-processor's
  // counts (2 / 3 for BERT's layout).
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

// tokenizer.json without a decoder: HF's decode joins the token strings with spaces (byte-level
// BPE too: roberta-base's tokenizer.json with decoder null).
TEST(HfGoldens, DecodeWithoutADecoder) {
  const auto records = read_jsonl(kHfData + "decoder_none.jsonl");
  ASSERT_GE(records.size(), 8u);
  std::ifstream in(kShared + "/assets/roberta-base-tokenizer/tokenizer.json");
  json doc = json::parse(in);
  doc["decoder"] = nullptr;
  const roberta::Tokenizer tok = roberta::Tokenizer::from_tokenizer_json_text(doc.dump(), "no-decoder");
  for (const json& r : records) {
    const std::vector<int32_t> ids = r["ids"];
    EXPECT_EQ(tok.encode(r["text"].get<std::string>()).ids, ids) << r["text"];
    EXPECT_EQ(tok.decode(ids, r["skip_special_tokens"]), r["decoded"].get<std::string>()) << r["text"];
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

// Lists of words (HF's is_pretokenized / transformers' is_split_into_words): each word tokenized
// alone, offsets into the word, word id = the word's index (tools/hf_goldens/pretokenized.js).
TEST(HfGoldens, PretokenizedWords) {
  const auto records = read_jsonl(kHfData + "pretokenized.jsonl");
  ASSERT_GE(records.size(), 120u);
  std::ifstream in(kShared + "/assets/roberta-base-tokenizer/tokenizer.json");
  const json base = json::parse(in);
  std::map<std::string, roberta::Tokenizer> variants;
  size_t checked = 0, errors = 0;
  for (const json& r : records) {
    const std::string name = r["variant"];
    if (!variants.count(name))
      variants.emplace(name, roberta::Tokenizer::from_tokenizer_json_text(patched(base, r["patch"]).dump(), name));
    const roberta::Tokenizer& tok = variants.at(name);
    const roberta::EncodeOptions options = record_options(r);
    const auto words = r["words"].get<std::vector<std::string>>();
    const bool pair = !r["pair_words"].is_null();
    const auto pair_words = pair ? r["pair_words"].get<std::vector<std::string>>() : std::vector<std::string>{};
    const std::string what = name + " " + r["words"].dump() + (pair ? " / " + r["pair_words"].dump() : "") + " " +
                             r["truncation"].dump() + (options.add_special_tokens ? " with specials" : "");
    const auto encode = [&] {
      return pair ? tok.encode_words_pair(words, pair_words, options) : tok.encode_words(words, options);
    };
    if (!r["error"].is_null()) {
      EXPECT_THROW(encode(), roberta::Error) << what << " (HF: " << r["error"] << ")";
      ++errors;
      continue;
    }
    const roberta::Encoding e = encode();
    EXPECT_EQ(diff_encoding(r, e), "") << what;
    EXPECT_EQ(json(e.word_ids), r["word_ids"]) << what;
    for (size_t t = 0; t < e.size(); ++t)  // byte offsets: the same spans in the word's bytes
      if (!e.special_tokens_mask[t])
        expect_byte_offsets(e, t, (e.sequence_ids[t] == 1 ? pair_words : words).at(static_cast<size_t>(e.word_ids[t])),
                            what);
    ++checked;
  }
  EXPECT_GE(checked, 120u);
  EXPECT_GE(errors, 1u);
}

// encode_words_batch on several threads: HF's encodings of the golden word lists, in input order,
// and a failing input named by its number.
TEST(HfGoldens, PretokenizedWordsInBatches) {
  std::ifstream in(kShared + "/assets/roberta-base-tokenizer/tokenizer.json");
  json doc = json::parse(in);
  std::vector<roberta::Tokenizer::WordsInput> inputs;
  std::vector<json> want;
  for (const json& r : read_jsonl(kHfData + "pretokenized.jsonl")) {
    if (r["variant"] != "aps" || !r["truncation"].is_null() || !r["add_special_tokens"].get<bool>()) continue;
    if (want.empty()) doc = patched(doc, r["patch"]);
    roberta::Tokenizer::WordsInput x{r["words"].get<std::vector<std::string>>(), std::nullopt};
    if (!r["pair_words"].is_null()) x.pair = r["pair_words"].get<std::vector<std::string>>();
    inputs.push_back(std::move(x));
    want.push_back(r);
  }
  ASSERT_GE(inputs.size(), 19u);
  const roberta::Tokenizer tok = roberta::Tokenizer::from_tokenizer_json_text(doc.dump(), "aps");
  for (unsigned threads : {1u, 2u, 3u}) {
    const auto got = tok.encode_words_batch(inputs, {}, threads);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(diff_encoding(want[i], got[i]), "") << i << " on " << threads << " threads";
      EXPECT_EQ(json(got[i].word_ids), want[i]["word_ids"]) << i;
    }
  }
  roberta::EncodeOptions only_first;
  only_first.max_length = 6;
  only_first.truncation = roberta::TruncationStrategy::kOnlyFirst;
  std::vector<roberta::Tokenizer::WordsInput> bad{{{"a", "b", "c"}, std::nullopt},
                                                  {{"x"}, std::vector<std::string>{"y", "z", "w", "v"}}};
  try {
    (void)tok.encode_words_batch(bad, only_first, 2);
    FAIL() << "no error";
  } catch (const roberta::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("input 2: truncation only_first", 0), 0u) << e.what();
  }
}

// Encoding's alignment queries against HF's answers (tests/data/hf/alignment.jsonl): every token,
// character and word index of singles and pairs, with and without special tokens, padded left and
// right, truncated right and left.
TEST(HfGoldens, AlignmentQueries) {
  const auto& tok = tokenizer_json();
  const auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  const auto span = [](const auto& v) { return v ? json::array({v->first, v->second}) : json(nullptr); };
  size_t checked = 0;
  for (const json& r : read_jsonl(kHfData + "alignment.jsonl")) {
    roberta::EncodeOptions o;
    o.add_special_tokens = r["add_special_tokens"];
    if (!r["truncation"].is_null()) {
      o.max_length = r["truncation"]["max_length"];
      o.truncation_side = r["truncation"]["direction"] == "left" ? roberta::Side::kLeft : roberta::Side::kRight;
    }
    const bool pair = !r["b"].is_null();
    roberta::Encoding e = pair ? tok.encode_pair(r["a"].get<std::string>(), r["b"].get<std::string>(), o)
                               : tok.encode(r["a"].get<std::string>(), o);
    if (!r["padding"].is_null()) {
      roberta::PaddingOptions p;
      p.length = r["padding"]["length"];
      p.side = r["padding"]["direction"] == "left" ? roberta::Side::kLeft : roberta::Side::kRight;
      tok.pad(std::span(&e, 1), p);
    }
    const std::string what = r["a"].dump() + " / " + r["b"].dump() + " " + r["padding"].dump() + " " +
                             r["truncation"].dump() + (o.add_special_tokens ? " with specials" : "");
    ASSERT_EQ(json(e.ids), r["ids"]) << what;
    EXPECT_EQ(e.n_sequences, r["n_sequences"].get<int>()) << what;
    for (size_t t = 0; t < r["token_to_sequence"].size(); ++t) {
      EXPECT_EQ(opt(e.token_to_sequence(t)), r["token_to_sequence"][t]) << what << " token " << t;
      EXPECT_EQ(opt(e.token_to_word(t)), r["token_to_word"][t]) << what << " token " << t;
      EXPECT_EQ(span(e.token_to_chars(t)), r["token_to_chars"][t]) << what << " token " << t;
    }
    for (int seq = 0; seq < 3; ++seq) {
      const std::string s = std::to_string(seq);
      for (size_t p = 0; p < r["char_to_token"][s].size(); ++p) {
        EXPECT_EQ(opt(e.char_to_token(static_cast<int64_t>(p), seq)), r["char_to_token"][s][p]) << what << " " << p;
        EXPECT_EQ(opt(e.char_to_word(static_cast<int64_t>(p), seq)), r["char_to_word"][s][p]) << what << " " << p;
      }
      for (size_t w = 0; w < r["word_to_tokens"][s].size(); ++w) {
        const auto word = static_cast<int32_t>(w);
        EXPECT_EQ(span(e.word_to_tokens(word, seq)), r["word_to_tokens"][s][w]) << what << " word " << w;
        EXPECT_EQ(span(e.word_to_chars(word, seq)), r["word_to_chars"][s][w]) << what << " word " << w;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 40u);
}

TEST(InvalidUtf8, PretokenizedErrorNamesTheWord) {
  const auto& tok = tokenizer_json();
  const std::vector<std::string> words{"fine", "bad\xff"};
  try {
    (void)tok.encode_words(words);
    FAIL() << "no error";
  } catch (const roberta::Error& e) {
    EXPECT_NE(std::string(e.what()).find("word 2 of text at byte 3"), std::string::npos) << e.what();
  }
  roberta::EncodeOptions replace;
  replace.invalid_utf8 = roberta::InvalidUtf8::kReplace;
  const roberta::Encoding e = tok.encode_words(words, replace);
  EXPECT_EQ(e.word_ids.back(), -1);
  EXPECT_EQ(e.word_ids[e.size() - 2], 1);
  EXPECT_EQ(e.offsets[e.size() - 2].second, 4);  // "bad\uFFFD": offsets into the repaired word
}

TEST(Offsets, ByteOffsetsAreTheCodePointOffsetsInBytes) {
  for (const json& c : read_jsonl(kShared + "/assets/tokenizer-cases.expected.jsonl")) {
    const std::string text = c["text"];
    std::vector<int64_t> byte_of_char;  // byte offset of each code point, plus the end
    for (size_t i = 0; i < text.size(); ++i)
      if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) byte_of_char.push_back(static_cast<int64_t>(i));
    byte_of_char.push_back(static_cast<int64_t>(text.size()));
    const roberta::Encoding e = tokenizer_json().encode(text);
    ASSERT_EQ(e.byte_offsets.size(), e.offsets.size());
    for (size_t t = 0; t < e.size(); ++t) {
      if (e.special_tokens_mask[t]) continue;
      EXPECT_EQ(e.byte_offsets[t].first, byte_of_char[e.offsets[t].first]) << text << " token " << t;
      EXPECT_EQ(e.byte_offsets[t].second, byte_of_char[e.offsets[t].second]) << text << " token " << t;
    }
  }
}

TEST(InvalidUtf8, ErrorNamesTheByteOffsetOrIsReplaced) {
  const auto& tok = tokenizer_json();
  const std::string bad = std::string("caf\xC3") + " ok \xFF\xFE";
  try {
    tok.encode(bad);
    ADD_FAILURE() << "expected an error";
  } catch (const roberta::Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid UTF-8 in text at byte 3"), std::string::npos) << e.what();
  }
  roberta::EncodeOptions replace;
  replace.invalid_utf8 = roberta::InvalidUtf8::kReplace;
  // Python's bytes.decode(errors="replace") gives "caf\ufffd ok \ufffd\ufffd": the same ids.
  EXPECT_EQ(tok.encode(bad, replace).ids, tok.encode("caf\xEF\xBF\xBD ok \xEF\xBF\xBD\xEF\xBF\xBD").ids);
  // Maximal subparts: a truncated 4-byte sequence is one U+FFFD, an overlong one is three.
  EXPECT_EQ(tok.encode("a\xF0\x9F\x98z", replace).ids, tok.encode("a\xEF\xBF\xBDz").ids);
  EXPECT_EQ(tok.encode("a\xE0\x80\x80z", replace).ids,
            tok.encode("a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz").ids);
}

TEST(Loaders, BadFilesGiveErrorsNamingFileAndPlace) {
  roberta::test::TempDir dir;
  const auto vocab = dir / "vocab.json";
  const auto merges = dir / "merges.txt";
  roberta::test::write_text(vocab, R"({"<s>":0,"<pad>":1,"</s>":2,"<unk>":3,"a":4,"b":5,"ab":6,"<mask>":7,"c":6})");
  roberta::test::write_text(merges, "#version: 0.2\na b\n");
  roberta::test::expect_error([&] { roberta::Tokenizer::from_vocab_merges(vocab, merges); },
                              {"vocab.json", "\"ab\"", "\"c\"", "same id 6"});
  roberta::test::write_text(vocab, R"({"<s>":0,"<pad>":1,"</s>":2,"<unk>":3,"a":4,"b":5,"ab":6,"<mask>":7000000})");
  roberta::test::expect_error([&] { roberta::Tokenizer::from_vocab_merges(vocab, merges); },
                              {"vocab.json", "7000000", "out of range"});
  roberta::test::write_text(vocab, R"({"<s>":0,"<pad>":1,"</s>":2,"<unk>":3,"a":4,"b":5,"ab":6,"<mask>":7})");
  roberta::test::write_text(merges, "#version: 0.2\na b\nb q\n");
  roberta::test::expect_error([&] { roberta::Tokenizer::from_vocab_merges(vocab, merges); },
                              {"merges.txt", "merge 2", "\"q\" is not in the vocabulary"});
  roberta::test::write_text(merges, "#version: 0.2\na b c\n");
  roberta::test::expect_error([&] { roberta::Tokenizer::from_vocab_merges(vocab, merges); },
                              {"merges.txt", "line 2", "two tokens"});
  roberta::test::write_text(dir / "tokenizer.json", R"({"model": {"type": "WordLevel", "vocab": {}}})");
  roberta::test::expect_error([&] { roberta::Tokenizer::from_dir(dir.path()); },
                              {"tokenizer.json", "\"WordLevel\" is not supported (BPE, WordPiece or Unigram)"});
  roberta::test::write_text(dir / "tokenizer.json", R"({"model": {"type": "WordPiece", "vocab": {}}})");
  roberta::test::expect_error([&] { roberta::Tokenizer::from_dir(dir.path()); },
                              {"tokenizer.json", "model.unk_token \"[UNK]\" is not in the vocabulary"});
  {
    // A WordPiece tokenizer.json: what is not supported, and broken fields and layouts, are named.
    std::ifstream wp_in(kHfData + "wordpiece/tokenizer.json");
    const json wp = json::parse(wp_in);
    json d = wp;
    d["normalizer"]["lowercase"] = "yes";
    roberta::test::expect_error([&] { roberta::Tokenizer::from_tokenizer_json_text(d.dump(), "w.json"); },
                                {"w.json: normalizer", "\"lowercase\" has the wrong type"});
    d = wp;
    d["pre_tokenizer"] = {{"type", "ByteLevel"}};
    roberta::test::expect_error([&] { roberta::Tokenizer::from_tokenizer_json_text(d.dump(), "w.json"); },
                                {"w.json", "pre_tokenizer \"ByteLevel\"", "WordPiece: only BertPreTokenizer"});
    d = wp;
    d["post_processor"]["pair"].erase(1);
    roberta::test::expect_error([&] { roberta::Tokenizer::from_tokenizer_json_text(d.dump(), "w.json"); },
                                {"w.json: post_processor.pair", "A and B once each"});
    d = wp;
    d["post_processor"]["single"][0]["SpecialToken"]["id"] = "[BOS]";
    roberta::test::expect_error([&] { roberta::Tokenizer::from_tokenizer_json_text(d.dump(), "w.json"); },
                                {"w.json: post_processor.single[0]", "\"[BOS]\" is not in special_tokens"});
    d = wp;
    d["post_processor"]["special_tokens"]["[CLS]"]["ids"][0] = 100000;
    roberta::test::expect_error([&] { roberta::Tokenizer::from_tokenizer_json_text(d.dump(), "w.json"); },
                                {"w.json", "special token id 100000 is not in the vocabulary"});
    d = wp;
    d["decoder"] = {{"type", "CTC"}};
    roberta::test::expect_error([&] { roberta::Tokenizer::from_tokenizer_json_text(d.dump(), "w.json"); },
                                {"w.json: decoder", "\"CTC\"", "ByteLevel, WordPiece, Metaspace"});
    // and a byte-level BPE does not take BERT's normalizer
    std::ifstream bpe_in(kShared + "/assets/roberta-base-tokenizer/tokenizer.json");
    d = json::parse(bpe_in);
    d["normalizer"] = wp["normalizer"];
    roberta::test::expect_error([&] { roberta::Tokenizer::from_tokenizer_json_text(d.dump(), "b.json"); },
                                {"b.json", "normalizer \"BertNormalizer\" is not supported"});
  }
  roberta::test::expect_error([&] { roberta::Tokenizer::from_dir(dir / "nowhere"); }, {"nowhere", "model folder not found"});
  // Options of HF's BPE that would change its tokens are refused; an empty normalizer is none.
  std::ifstream in(kShared + "/assets/roberta-base-tokenizer/tokenizer.json");
  const json base = json::parse(in);
  json doc = base;
  doc["model"]["ignore_merges"] = true;
  roberta::test::expect_error([&] { roberta::Tokenizer::from_tokenizer_json_text(doc.dump(), "t.json"); },
                              {"t.json", "ignore_merges"});
  doc = base;
  doc["model"]["dropout"] = 0.1;
  roberta::test::expect_error([&] { roberta::Tokenizer::from_tokenizer_json_text(doc.dump(), "t.json"); },
                              {"t.json", "dropout 0.1"});
  doc = base;
  doc["normalizer"] = {{"type", "Sequence"}, {"normalizers", json::array()}};
  EXPECT_EQ(roberta::Tokenizer::from_tokenizer_json_text(doc.dump(), "t.json").encode("Hello world").ids,
            tokenizer_json().encode("Hello world").ids);
  doc["normalizer"]["normalizers"].push_back({{"type", "Lowercase"}});
  roberta::test::expect_error([&] { roberta::Tokenizer::from_tokenizer_json_text(doc.dump(), "t.json"); },
                              {"t.json", "normalizer", "not supported"});
}

// transformers' RobertaTokenizerFast rewrites add_prefix_space in a ByteLevel pre-tokenizer (from
// tokenizer_config.json), not in one inside a Sequence, whose state has no such key.
TEST(Loaders, TokenizerConfigAddPrefixSpaceRewritesAPlainByteLevelPreTokenizerOnly) {
  roberta::test::TempDir dir;
  std::ifstream in(kShared + "/assets/roberta-base-tokenizer/tokenizer.json");
  json doc = json::parse(in);
  std::filesystem::create_directories(dir / "plain");
  roberta::test::write_text(dir / "plain" / "tokenizer.json", doc.dump());
  roberta::test::write_text(dir / "plain" / "tokenizer_config.json", R"({"add_prefix_space": true})");
  doc["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::array({doc["pre_tokenizer"]})}};
  std::filesystem::create_directories(dir / "seq");
  roberta::test::write_text(dir / "seq" / "tokenizer.json", doc.dump());
  roberta::test::write_text(dir / "seq" / "tokenizer_config.json", R"({"add_prefix_space": true})");
  const auto& base = tokenizer_json();
  EXPECT_EQ(roberta::Tokenizer::from_dir(dir / "plain").encode("Hello").ids.at(1), *base.token_to_id("\u0120Hello"));
  EXPECT_EQ(roberta::Tokenizer::from_dir(dir / "seq").encode("Hello").ids.at(1), *base.token_to_id("Hello"));
}

// The kind of roberta::Error `fn` throws, by name ("no error" when it throws none).
template <class Fn>
std::string error_kind_of(Fn&& fn) {
  try {
    fn();
  } catch (const roberta::Error& e) {
    return roberta::error_kind_name(e.kind());
  }
  return "no error";
}

// Errors about the content of the tokenizer files are kInvalidModel, files that cannot be read
// kIo, and errors about the text being encoded kInvalidInput.
TEST(Loaders, ErrorKindsTellModelFileAndInputApart) {
  using roberta::ErrorKind;
  const std::string model = roberta::error_kind_name(ErrorKind::kInvalidModel);
  roberta::test::TempDir dir;
  roberta::test::write_text(dir / "tokenizer.json", R"({"model": {"type": "WordPiece", "vocab": {}}})");
  EXPECT_EQ(error_kind_of([&] { roberta::Tokenizer::from_dir(dir.path()); }), model);
  roberta::test::write_text(dir / "vocab.json", R"({"<s>":0,"<pad>":1,"</s>":2,"<unk>":3,"<mask>":4,"a":5})");
  roberta::test::write_text(dir / "merges.txt", "a q\n");  // merges a token that is not in the vocabulary
  EXPECT_EQ(error_kind_of([&] { roberta::Tokenizer::from_vocab_merges(dir / "vocab.json", dir / "merges.txt"); }),
            model);
  roberta::test::write_text(dir / "bad.json", "{\"model\": ");
  EXPECT_EQ(error_kind_of([&] { roberta::Tokenizer::from_tokenizer_json(dir / "bad.json"); }), model);

  EXPECT_EQ(error_kind_of([&] { roberta::Tokenizer::from_tokenizer_json(dir / "missing.json"); }),
            roberta::error_kind_name(ErrorKind::kIo));
  EXPECT_EQ(error_kind_of([&] { roberta::Tokenizer::from_dir(dir / "nowhere"); }),
            roberta::error_kind_name(ErrorKind::kIo));

  EXPECT_EQ(error_kind_of([&] { tokenizer_json().encode("caf\xC3"); }),
            roberta::error_kind_name(ErrorKind::kInvalidInput));
}

}  // namespace

// ---------------------------------------------------------------- encode_batch failures

namespace {

// Clears the encode_batch test hook at the end of a test, whatever happens.
struct EncodeBatchHook {
  explicit EncodeBatchHook(void (*hook)(size_t)) { roberta::test_hooks::encode_batch_item = hook; }
  ~EncodeBatchHook() { roberta::test_hooks::encode_batch_item = nullptr; }
};

// A roberta::Error is rethrown on the caller with the index of the first failing text, its kind kept.
TEST(EncodeBatch, ErrorNamesTheFirstFailingText) {
  std::vector<std::string> texts(100, "Hello world!");
  texts[37] = "caf\xC3";
  texts[70] = "\xFF";
  try {
    tokenizer_json().encode_batch(texts, {}, 2);
    ADD_FAILURE() << "expected an error";
  } catch (const roberta::Error& e) {
    EXPECT_EQ(std::string(e.what()), "input 38: invalid UTF-8 in text at byte 3");  // texts[37], counted from 1
    EXPECT_STREQ(roberta::error_kind_name(e.kind()), "invalid input");
  }
  EncodeBatchHook hook([](size_t i) {
    if (i == 50) throw roberta::Error("no room", roberta::ErrorKind::kIo);
  });
  texts[37] = texts[70] = "Hello world!";
  try {
    tokenizer_json().encode_batch(texts, {}, 2);
    ADD_FAILURE() << "expected an error";
  } catch (const roberta::Error& e) {
    EXPECT_EQ(std::string(e.what()), "input 51: no room");
    EXPECT_STREQ(roberta::error_kind_name(e.kind()), "I/O");
  }
}

// Any other exception in a worker thread (here std::bad_alloc, from the test hook, on every text so
// that the worker thread meets one too) reaches the caller unchanged instead of escaping the thread,
// which would terminate the process.
TEST(EncodeBatch, OtherExceptionsInWorkersAreRethrownOnTheCaller) {
  const std::vector<std::string> texts(100, "Hello world!");
  {
    EncodeBatchHook hook([](size_t) { throw std::bad_alloc(); });
    EXPECT_THROW(tokenizer_json().encode_batch(texts, {}, 2), std::bad_alloc);
  }
  {
    // The first failure by index wins, whichever thread met it first.
    EncodeBatchHook hook([](size_t i) { throw std::out_of_range("text " + std::to_string(i)); });
    try {
      tokenizer_json().encode_batch(texts, {}, 2);
      ADD_FAILURE() << "expected std::out_of_range";
    } catch (const std::out_of_range& e) {
      EXPECT_EQ(std::string(e.what()), "text 0");
    }
  }
  EXPECT_EQ(tokenizer_json().encode_batch(texts, {}, 2).size(), texts.size());  // hook cleared
}

}  // namespace
