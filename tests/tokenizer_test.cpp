// Tokenizer tests against Hugging Face's output (golden files made with HF's Rust tokenizer).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "roberta/tokenizer.h"

namespace {

using json = nlohmann::json;
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

std::vector<json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::vector<json> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

json offsets_json(const std::vector<roberta::Offsets>& offsets) {
  json out = json::array();
  for (const auto& [s, e] : offsets) out.push_back({s, e});
  return out;
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
