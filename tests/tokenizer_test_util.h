#pragma once
// Shared by tokenizer_test.cpp, tokenizer_wordpiece_test.cpp and tokenizer_errors_test.cpp: where
// the test assets are, and roberta-base's tokenizer, loaded once.
#include <string>

#include "roberta/tokenizer.h"

namespace roberta::test {

inline const std::string kShared = ROBERTA_SHARED_DIR;
inline const std::string kTokenizerDir = kShared + "/assets/roberta-base-tokenizer";
inline const std::string kHfData = std::string(ROBERTA_TEST_DATA) + "/hf/";

inline const roberta::Tokenizer& tokenizer_json() {
  static const roberta::Tokenizer tok = roberta::Tokenizer::from_tokenizer_json(kTokenizerDir + "/tokenizer.json");
  return tok;
}

}  // namespace roberta::test
