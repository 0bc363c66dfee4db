// Tokenizers against Hugging Face's output (golden files made with HF's Rust tokenizer): roberta-base's
// byte-level BPE on texts, pairs, truncation, padding, decoding, words, alignment; corpus id streams.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hf_goldens.h"
#include "roberta/tokenizer.h"
#include "sha256.h"
#include "test_util.h"
#include "tokenizer_test_util.h"

namespace {

using json = nlohmann::json;
using namespace roberta::test;

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

// ---------------------------------------------------------------- HF goldens: pairs, truncation,
// padding, decode and added tokens (tests/data/hf, made by tools/hf_goldens/gen_tokenizer_goldens.sh)

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

// Byte offsets are the code-point offsets measured in UTF-8 bytes (HF's char offsets always fall
// on character boundaries, so converting them must give ours exactly).
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

}  // namespace
