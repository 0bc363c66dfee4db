// Decoding ids back to text (HF's ByteLevel decoder) and the lookups between ids and tokens.
#include <string>

#include "byte_level.h"
#include "tokenizer_impl.h"
#include "unicode.h"

namespace roberta {

// Ids not in the vocabulary are skipped (as HF); the bytes are joined, then made valid UTF-8.
std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= impl_->has_id.size() || !impl_->has_id[id]) continue;  // as HF
    if (skip_special_tokens && impl_->special_by_id[id]) continue;
    const std::string& token = impl_->tokens_by_id[id];
    // Map each byte-level character back to its byte; a token with other characters (an added
    // token such as "<mask>" is plain ASCII and maps to itself) is copied as it is.
    const size_t mark = bytes.size();
    bool all_byte_level = true;
    for (size_t i = 0; i < token.size();) {
      const int byte = byte_level::char_to_byte(unicode::next_code_point(token, i));
      if (byte < 0) {
        all_byte_level = false;
        break;
      }
      bytes.push_back(static_cast<char>(byte));
    }
    if (!all_byte_level) {
      bytes.resize(mark);
      bytes += token;
    }
  }
  return unicode::find_invalid_utf8(bytes) ? unicode::repair_utf8(bytes) : bytes;
}

// Any token of the vocabulary or the added vocabulary.
std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  const auto it = impl_->ids_by_token.find(token);
  if (it == impl_->ids_by_token.end()) return std::nullopt;
  return it->second;
}

// The token string as stored (byte-level characters such as "Ġ" for a space).
const std::string& Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->has_id.size() || !impl_->has_id[id])
    throw Error("token id " + std::to_string(id) + " is not in the vocabulary");
  return impl_->tokens_by_id[id];
}

// ---- what the loaded files say

size_t Tokenizer::vocab_size() const { return impl_->has_id.size(); }
const std::vector<AddedToken>& Tokenizer::added_tokens() const { return impl_->added.tokens; }
bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special_by_id.size() && impl_->special_by_id[id];
}
int32_t Tokenizer::bos_id() const { return impl_->cls_id; }
int32_t Tokenizer::eos_id() const { return impl_->sep_id; }
int32_t Tokenizer::pad_id() const { return impl_->pad_id; }
std::optional<int32_t> Tokenizer::mask_id() const { return impl_->mask_id; }
// 0 without a RobertaProcessing post-processor.
size_t Tokenizer::num_special_tokens_to_add(bool pair) const {
  return impl_->roberta_specials ? (pair ? 4 : 2) : 0;
}

}  // namespace roberta
