#pragma once
// Python's str.lower() on UTF-8 text: what sentence-transformers applies before tokenizing when a
// model's sentence_bert_config.json says "do_lower_case": true.
//
//   roberta::lowercase("HELLO Wörld ΟΔΟΣ")  // "hello wörld οδος" (final sigma as Python does)
#include <string>
#include <string_view>

namespace roberta {

// Throws roberta::Error (kInvalidInput) naming the byte offset of invalid UTF-8.
std::string lowercase(std::string_view text);

}  // namespace roberta
