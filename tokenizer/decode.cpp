// Decoding ids back to text (HF's ByteLevel decoder) and the lookups between ids and tokens.
#include <string>
#include <string_view>
#include <utility>

#include "byte_level.h"
#include "tokenizer_impl.h"
#include "unicode.h"

namespace roberta {

namespace {

// HF's WordPiece decoder's cleanup of one token.
void cleanup(std::string& s) {
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"},
      {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    std::string out;
    size_t pos = 0;
    for (size_t at; (at = s.find(from, pos)) != std::string::npos; pos = at + from.size()) {
      out.append(s, pos, at - pos);
      out.append(to);
    }
    if (pos == 0) continue;
    out.append(s, pos);
    s = std::move(out);
  }
}

// HF's WordPiece decoder on token strings: a token after the first loses the prefix ("##") it
// starts with, or else gets a space before it; each is then cleaned up.
void wordpiece_join(std::string& out, std::string_view token, bool first, const std::string& prefix, bool clean) {
  std::string piece(token);
  if (!first) {
    if (piece.starts_with(prefix))
      piece.erase(0, prefix.size());
    else
      piece.insert(0, 1, ' ');
  }
  if (clean) cleanup(piece);
  out += piece;
}

// HF's ByteLevel decoder on one token string: its bytes when every character is a byte-level
// character, else the string as it is.
void byte_level_join(std::string& bytes, std::string_view token) {
  const size_t mark = bytes.size();
  for (size_t i = 0; i < token.size();) {
    const int byte = byte_level::char_to_byte(unicode::next_code_point(token, i));
    if (byte < 0) {
      bytes.resize(mark);
      bytes += token;
      return;
    }
    bytes.push_back(static_cast<char>(byte));
  }
}

}  // namespace

std::string Tokenizer::convert_tokens_to_string(std::span<const std::string> tokens) const {
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (impl_->no_decoder) {
      if (i > 0) out += ' ';
      out += tokens[i];
    } else if (impl_->wordpiece_decoder) {
      wordpiece_join(out, tokens[i], i == 0, impl_->decoder_prefix, impl_->decoder_cleanup);
    } else if (unicode::find_invalid_utf8(tokens[i])) {
      out += tokens[i];  // (not a token string: repaired below)
    } else {
      byte_level_join(out, tokens[i]);
    }
  }
  return unicode::find_invalid_utf8(out) ? unicode::repair_utf8(out) : out;
}

// Ids not in the vocabulary are skipped (as HF). ByteLevel: the bytes are joined, then made valid
// UTF-8; WordPiece: continuations ("##") joined to the token before, other tokens after a space;
// without a decoder, the tokens joined with spaces.
std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  bool first = true;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= impl_->has_id.size() || !impl_->has_id[id]) continue;  // as HF
    if (skip_special_tokens && impl_->special_by_id[id]) continue;
    const auto normalized = impl_->decoded_added.find(id);
    const std::string& token = normalized == impl_->decoded_added.end() ? impl_->tokens_by_id[id] : normalized->second;
    if (impl_->no_decoder)
      bytes.append(first ? "" : " ").append(token);
    else if (impl_->wordpiece_decoder)
      wordpiece_join(bytes, token, first, impl_->decoder_prefix, impl_->decoder_cleanup);
    else
      byte_level_join(bytes, token);  // (an added token such as "<mask>" is plain ASCII: itself)
    first = false;
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
std::optional<int32_t> Tokenizer::unk_id() const { return impl_->unk_id; }
// What the post-processor adds: 2 / 4 for RoBERTa's, 2 / 3 for BERT's, 0 without one.
size_t Tokenizer::num_special_tokens_to_add(bool pair) const {
  size_t n = 0;
  for (const TemplatePiece& piece : pair ? impl_->pair_template : impl_->single_template) n += piece.ids.size();
  return n;
}
bool Tokenizer::is_wordpiece() const { return impl_->wordpiece != nullptr; }
bool Tokenizer::lowercases() const { return impl_->wordpiece && impl_->wordpiece->lowercase; }
bool Tokenizer::strips_accents() const { return impl_->wordpiece && impl_->wordpiece->strip_accents; }

}  // namespace roberta
