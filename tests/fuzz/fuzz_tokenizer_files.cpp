// libFuzzer target: the tokenizer loaders (tokenizer.json: byte-level BPE, WordPiece or Unigram; vocab.json +
// merges.txt split at the first NUL byte). Any input must load or throw roberta::Error, and a loaded tokenizer must work.
#include <cstdint>
#include <string>

#include "roberta/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  try {
    const auto tok = roberta::Tokenizer::from_tokenizer_json_text(input, "tokenizer.json");
    tok.encode("Hello <mask> world! 123 \xF0\x9F\x98\x80");
    // the post-processor's layout of a pair, truncated, and the decoder (a WordPiece one too)
    roberta::EncodeOptions options;
    options.max_length = 6;
    tok.decode(tok.encode_pair("Hello world", "\xEC\x95\x88\xEB\x85\x95 [MASK] \xE6\x97\xA5", options).ids, true);
  } catch (const roberta::Error&) {
  }
  const size_t nul = input.find('\0');
  if (nul != std::string::npos) {
    try {
      const auto tok = roberta::Tokenizer::from_vocab_merges_text(input.substr(0, nul), input.substr(nul + 1), "vocab.json",
                                                                 "merges.txt");
      tok.decode(tok.encode("Hello <mask> world!").ids);
    } catch (const roberta::Error&) {
    }
  }
  return 0;
}
