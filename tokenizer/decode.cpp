// Decoding ids back to text (HF's ByteLevel, WordPiece and Metaspace decoders, the byte-fallback
// chain) and the lookups between ids and tokens.
#include <optional>
#include <string>
#include <vector>
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

// HF's ByteFallback decoder's byte of "<0xXX>" (u8::from_str_radix of the two characters after
// "<0x", which takes a leading '+').
std::optional<uint8_t> fallback_byte(std::string_view token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return std::nullopt;
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = token[3] == '+' ? 0 : hex(token[3]), lo = hex(token[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<uint8_t>(hi * 16 + lo);
}

// HF's decode_chain of each step, then the strings joined.
std::string run_decoder_steps(const std::vector<DecoderStep>& steps, std::vector<std::string> tokens) {
  for (const DecoderStep& step : steps) {
    switch (step.kind) {
      case DecoderStep::kMetaspace:
      case DecoderStep::kReplace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          const std::string_view with = step.kind == DecoderStep::kReplace ? std::string_view(step.content)
                                        : i == 0 && step.drop_first     ? std::string_view()
                                                                        : std::string_view(" ");
          std::string out;
          const std::string& t = tokens[i];
          size_t at = 0;
          for (size_t next; (next = t.find(step.pattern, at)) != std::string::npos; at = next + step.pattern.size())
            out.append(t, at, next - at).append(with);
          tokens[i] = std::move(out.append(t, at));
        }
        break;
      case DecoderStep::kByteFallback: {
        std::vector<std::string> out;
        std::string bytes;
        const auto flush = [&] {
          if (bytes.empty()) return;
          if (unicode::find_invalid_utf8(bytes))
            out.insert(out.end(), bytes.size(), "\xEF\xBF\xBD");
          else
            out.push_back(bytes);
          bytes.clear();
        };
        for (std::string& t : tokens) {
          if (const auto b = fallback_byte(t)) {
            bytes.push_back(static_cast<char>(*b));
          } else {
            flush();
            out.push_back(std::move(t));
          }
        }
        flush();
        tokens = std::move(out);
        break;
      }
      case DecoderStep::kFuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens.assign(1, std::move(all));
        break;
      }
      case DecoderStep::kStrip:
        for (std::string& t : tokens) {
          const std::string& c = step.pattern;
          size_t b = 0, e = t.size();
          for (size_t k = 0; k < step.start && t.compare(b, c.size(), c) == 0; ++k) b += c.size();
          for (size_t k = 0; k < step.stop && e >= b + c.size() && t.compare(e - c.size(), c.size(), c) == 0; ++k)
            e -= c.size();
          t = t.substr(b, e - b);
        }
        break;
    }
  }
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace

std::string Tokenizer::convert_tokens_to_string(std::span<const std::string> tokens) const {
  if (!impl_->decoder_steps.empty()) {
    const std::string out = run_decoder_steps(impl_->decoder_steps, {tokens.begin(), tokens.end()});
    return unicode::find_invalid_utf8(out) ? unicode::repair_utf8(out) : out;
  }
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
// Metaspace: "▁" a space (dropped in the first token); without a decoder, the tokens joined with
// spaces.
std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> chain;  // (a decoder of decoder_steps)
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
    else if (!impl_->decoder_steps.empty())
      chain.push_back(token);
    else
      byte_level_join(bytes, token);  // (an added token such as "<mask>" is plain ASCII: itself)
    first = false;
  }
  if (!impl_->decoder_steps.empty()) bytes = run_decoder_steps(impl_->decoder_steps, std::move(chain));
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
bool Tokenizer::is_unigram() const { return impl_->unigram != nullptr; }
bool Tokenizer::lowercases() const { return impl_->wordpiece && impl_->wordpiece->lowercase; }
bool Tokenizer::strips_accents() const { return impl_->wordpiece && impl_->wordpiece->strip_accents; }

}  // namespace roberta
