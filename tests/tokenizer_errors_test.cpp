// The tokenizer's errors: bad tokenizer files named with the place, the kinds of errors, invalid
// UTF-8 named by its byte or replaced, and encode_batch's failures rethrown on the caller.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "roberta/error.h"
#include "roberta/tokenizer.h"
#include "tokenizer/test_hooks.h"
#include "test_util.h"
#include "tokenizer_test_util.h"

namespace {

using json = nlohmann::json;
using namespace roberta::test;

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

// ---------------------------------------------------------------- encode_batch failures

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
