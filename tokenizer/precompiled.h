#pragma once
// HF's Precompiled normalizer: SentencePiece's normalization rules (e.g. nmt_nfkc, what
// XLM-RoBERTa's tokenizer.json carries as `precompiled_charsmap`), a double-array trie of byte
// strings and the strings they become, applied as HF's crate spm_precompiled applies them: each
// extended grapheme cluster of fewer than 6 bytes is replaced by the rule of the shortest prefix
// of it that has one, else each of its characters by its own rule.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "normalized_text.h"

namespace roberta {

class Precompiled {
 public:
  // Parses the charsmap (little-endian u32 trie size in bytes, the trie's u32 units, the
  // NUL-separated replacements); std::invalid_argument with what is wrong.
  explicit Precompiled(std::string_view charsmap);

  // The replacement of the shortest prefix of `chunk` that has a rule (spm_precompiled's
  // transform: the first result of the trie's common prefix search).
  std::optional<std::string_view> transform(std::string_view chunk) const;
  void normalize(NormalizedText& n, size_t origin) const;

 private:
  std::vector<uint32_t> units_;
  std::string replacements_;
};

// Base64 as HF's spm_precompiled decodes the JSON's charsmap (the standard alphabet, padding
// optional); std::invalid_argument if it is not.
std::string decode_base64(std::string_view text);

// The end (byte offset) of the extended grapheme cluster of valid UTF-8 `text` starting at `begin`
// (UAX #29, Unicode 17.0, as the Rust crate unicode-segmentation 1.13 finds them).
size_t grapheme_end(std::string_view text, size_t begin);
const char* grapheme_unicode_version();

}  // namespace roberta
