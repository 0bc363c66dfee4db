// Encoding: added-token split, GPT-2 pre-tokenization and BPE (or BERT's pre-tokenization and
// WordPiece, or SentencePiece's normalizers, Metaspace and Unigram) with offsets in code points and
// bytes (HF's trim_offsets), truncation, and the post-processor's special tokens (RoBERTa's
// <s> A </s></s> B </s>, BERT's [CLS] A [SEP] B [SEP]).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "pre_tokenizer.h"
#include "tokenizer_impl.h"
#include "truncation.h"
#include "unicode.h"

namespace roberta {

namespace {

// Appends one special token (<s>, </s>): no offsets, no word, no sequence.
void push_special(Encoding& e, int32_t id, const std::string& token, uint32_t type_id) {
  e.ids.push_back(id);
  e.type_ids.push_back(type_id);
  e.tokens.push_back(token);
  e.offsets.emplace_back(0, 0);
  e.byte_offsets.emplace_back(0, 0);
  e.special_tokens_mask.push_back(1);
  e.attention_mask.push_back(1);
  e.sequence_ids.push_back(-1);
  e.word_ids.push_back(-1);
}

// Appends the tokens of `src` to `dst`, every field.
void append_encoding(Encoding& dst, const Encoding& src) {
  const auto add = [](auto& d, const auto& s) { d.insert(d.end(), s.begin(), s.end()); };
  add(dst.ids, src.ids), add(dst.type_ids, src.type_ids), add(dst.tokens, src.tokens);
  add(dst.offsets, src.offsets), add(dst.byte_offsets, src.byte_offsets);
  add(dst.special_tokens_mask, src.special_tokens_mask), add(dst.attention_mask, src.attention_mask);
  add(dst.sequence_ids, src.sequence_ids), add(dst.word_ids, src.word_ids);
}

// `text` when it is valid UTF-8; else an Error (kInvalidInput) naming `which` and the byte, or
// (kReplace) the text repaired into `repaired`.
std::string_view checked_text(std::string_view text, InvalidUtf8 mode, std::string& repaired, const char* which) {
  if (const auto bad = unicode::find_invalid_utf8(text)) {
    if (mode == InvalidUtf8::kError)
      throw Error(std::string("invalid UTF-8 in ") + which + " at byte " + std::to_string(*bad));
    repaired = unicode::repair_utf8(text);
    return repaired;
  }
  return text;
}

}  // namespace

bool Tokenizer::Impl::normalizes() const {
  return (wordpiece && wordpiece->normalizes()) || (unigram && unigram->normalizes());
}

void Tokenizer::Impl::normalize(std::string_view text, size_t begin, size_t end, NormalizedText& out) const {
  if (wordpiece)
    wordpiece->normalize(text, begin, end, out);
  else
    unigram->normalize(text, begin, end, out);
}

// Calls on_token(id, begin, end, leading_spaces, leading_bytes, trailing_spaces, trailing_bytes,
// first_of_word, token) for the model's tokens of the plain text text[begin, end) (see
// tokenizer_impl.h); for BPE, begin/end are byte offsets into `text` widened to whole characters. A
// prefix space (add_prefix_space) is aligned, as HF aligns it, with the text's first character: a
// token of that space alone spans that character, and trimming the space takes that character's
// bytes (a real space is one byte).
template <class OnToken>
void Tokenizer::Impl::tokenize_text(std::string_view text, size_t begin, size_t end, OnToken&& on_token) const {
  if (wordpiece) {  // offsets as they are (HF trims only byte-level tokens)
    thread_local std::vector<WordPieceToken> tokens;
    tokens.clear();
    wordpiece->tokenize(text, begin, end, tokens);
    for (const WordPieceToken& t : tokens) on_token(t.id, t.begin, t.end, 0u, 0u, 0u, 0u, t.first_of_word, {});
    return;
  }
  if (unigram) {
    thread_local NormalizedText n;
    thread_local std::vector<UnigramToken> tokens;
    tokens.clear();
    unigram->normalize(text, begin, end, n);
    unigram->tokenize_normalized(n, 0, n.text.size(), tokens);
    n.release_if_large();
    for (const UnigramToken& t : tokens) on_token(t.id, t.begin, t.end, 0u, 0u, 0u, 0u, t.first_of_word, t.text);
    return;
  }
  std::string prefixed;
  std::string_view piece_text = text.substr(begin, end - begin);
  size_t shift = 0;  // 1 when a prefix space was added
  if (add_prefix_space && !piece_text.starts_with(' ')) {
    prefixed.reserve(piece_text.size() + 1);
    prefixed = " ";
    prefixed.append(piece_text);
    piece_text = prefixed;
    shift = 1;
  }
  thread_local std::vector<BpePiece> pieces;
  const auto on_word = [&](size_t wb, size_t we) {
    pieces.clear();
    bpe->encode_word(piece_text.substr(wb, we - wb), pieces);
    size_t pos = wb;
    bool first_of_word = true;
    for (const BpePiece& piece : pieces) {
      const size_t pb = pos, pe = pos + piece.bytes;
      pos = pe;
      // original byte span, widened to whole characters
      size_t ob = begin + (pb >= shift ? pb - shift : 0);
      size_t oe = begin + (pe >= shift ? pe - shift : 0);
      if (pe <= shift && end > begin) oe = begin + 1;  // the prefix space alone: the first character
      while (ob > begin && ob < end && unicode::is_continuation_byte(text[ob])) --ob;
      while (oe < end && oe > ob && unicode::is_continuation_byte(text[oe])) ++oe;
      uint32_t lead = 0, trail = 0;
      while (pb + lead < pe && piece_text[pb + lead] == ' ') ++lead;
      while (pe - trail > pb && piece_text[pe - trail - 1] == ' ') ++trail;
      uint32_t lead_bytes = lead, trail_bytes = trail;
      if (pb < shift && end > begin) {  // the prefix space: the first character's bytes
        size_t first_end = begin + 1;
        while (first_end < end && unicode::is_continuation_byte(text[first_end])) ++first_end;
        const auto bytes = static_cast<uint32_t>(first_end - begin);
        lead_bytes = lead - 1 + bytes;
        if (pe <= shift) trail_bytes = trail - 1 + bytes;  // the token is that space alone
      }
      on_token(piece.id, ob, oe, lead, lead_bytes, trail, trail_bytes, first_of_word, std::string_view{});
      first_of_word = false;
    }
  };
  if (use_regex)
    split_gpt2(piece_text, on_word);
  else if (!piece_text.empty())
    on_word(0, piece_text.size());
}

// The pieces of `text` in order: each added token found (on_added(index into added.tokens, begin,
// end, the matched text, whether it was matched in the normalized text)) and the model's tokens
// of the text between (on_token as tokenize_text's). With a normalizer (WordPiece's or Unigram's)
// and normalized added tokens, those are found in the normalized text between the others, by their
// normalized content, as HF's AddedVocabulary::extract_and_normalize finds them; begin/end are then
// the original span of the match's first and last characters.
template <class OnAdded, class OnToken>
void Tokenizer::Impl::for_each_piece(std::string_view text, OnAdded&& on_added, OnToken&& on_token) const {
  std::vector<Segment> segments;
  const auto raw = [&](const Segment& s) { return text.substr(s.begin, s.end - s.begin); };
  if (!(normalizes() && added.has_normalized())) {
    added.split(text, segments);
    for (const Segment& s : segments) {
      if (s.added >= 0)
        on_added(s.added, s.begin, s.end, raw(s), false);
      else
        tokenize_text(text, s.begin, s.end, on_token);
    }
    return;
  }
  added.split_raw(text, segments);
  thread_local NormalizedText n;
  std::vector<Segment> inner;
  std::vector<WordPieceToken> tokens;
  std::vector<UnigramToken> unigram_tokens;
  for (const Segment& s : segments) {
    if (s.added >= 0) {
      on_added(s.added, s.begin, s.end, raw(s), false);
      continue;
    }
    normalize(text, s.begin, s.end, n);
    inner.clear();
    added.split_normalized(n.text, inner);
    for (const Segment& p : inner) {
      if (p.added >= 0) {
        const std::string_view matched = std::string_view(n.text).substr(p.begin, p.end - p.begin);
        on_added(p.added, n.source[p.begin].first, n.source[p.end - 1].second, matched, true);
      } else if (wordpiece) {
        tokens.clear();
        wordpiece->tokenize_normalized(n, p.begin, p.end, tokens);
        for (const WordPieceToken& t : tokens) on_token(t.id, t.begin, t.end, 0u, 0u, 0u, 0u, t.first_of_word, {});
      } else {
        unigram_tokens.clear();
        unigram->tokenize_normalized(n, p.begin, p.end, unigram_tokens);
        for (const UnigramToken& t : unigram_tokens)
          on_token(t.id, t.begin, t.end, 0u, 0u, 0u, 0u, t.first_of_word, t.text);
      }
    }
  }
  n.release_if_large();
}

// Added tokens keep the matched text (with what lstrip/rstrip took) as their token string; BPE
// tokens are the vocabulary's strings. Word ids count pre-tokens and added-token matches.
void Tokenizer::Impl::tokenize(std::string_view text, int8_t sequence_id, Encoding& enc,
                               std::vector<TokenNotes>& notes) const {
  // Code point index of each byte offset (only needed when the text is not pure ASCII).
  std::vector<uint32_t> char_at;
  bool ascii = true;
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) {
      ascii = false;
      break;
    }
  if (!ascii) {
    char_at.resize(text.size() + 1);
    uint32_t chars = 0;
    for (size_t i = 0; i < text.size(); ++i)
      char_at[i] = unicode::is_continuation_byte(text[i]) ? chars - 1 : chars++;
    char_at[text.size()] = chars;
  }
  const auto to_char = [&](size_t byte) -> int64_t { return ascii ? static_cast<int64_t>(byte) : char_at[byte]; };
  const size_t first_token = enc.ids.size();
  int32_t word = -1;  // index of the current word (pre-token or added-token match)
  // Offsets untrimmed; what HF's trim_offsets would take off each end goes to `notes`, with whether
  // the token is an added token matched in the text.
  const auto push = [&](int32_t id, std::string token, size_t ob, size_t oe, uint32_t lead_chars,
                        uint32_t lead_bytes, uint32_t trail_chars, uint32_t trail_bytes, bool added_match) {
    enc.ids.push_back(id);
    enc.tokens.push_back(std::move(token));
    enc.offsets.emplace_back(to_char(ob), to_char(oe));
    enc.byte_offsets.emplace_back(static_cast<int64_t>(ob), static_cast<int64_t>(oe));
    enc.word_ids.push_back(word);
    notes.push_back({lead_chars, lead_bytes, trail_chars, trail_bytes, added_match});
  };
  for_each_piece(
      text,
      [&](int index, size_t begin, size_t end, std::string_view matched, bool in_normalized) {
        // The token string is the matched text, stripped whitespace included (as HF shows it); the
        // spaces trim_offsets may take off are those of the raw text (WordPiece ones never trim).
        uint32_t lead_c = 0, lead_b = 0, trail_c = 0, trail_b = 0;
        for (size_t i = 0; i < matched.size() && !in_normalized;) {
          const size_t at = i;
          const char32_t cp = unicode::next_code_point(matched, i);
          if (!(unicode::is_whitespace(cp) || cp == 0x120)) break;
          ++lead_c, lead_b += static_cast<uint32_t>(i - at);
        }
        for (size_t e = matched.size(); e > 0 && !in_normalized;) {
          size_t q = e - 1;
          while (q > 0 && unicode::is_continuation_byte(matched[q])) --q;
          size_t i = q;
          const char32_t cp = unicode::next_code_point(matched, i);
          if (!(unicode::is_whitespace(cp) || cp == 0x120)) break;
          ++trail_c, trail_b += static_cast<uint32_t>(e - q);
          e = q;
        }
        ++word;
        push(added.tokens[index].id, std::string(matched), begin, end, lead_c, lead_b, trail_c, trail_b, true);
      },
      [&](int32_t id, size_t ob, size_t oe, uint32_t lead, uint32_t lead_bytes, uint32_t trail, uint32_t trail_bytes,
          bool first_of_word, std::string_view token) {
        if (first_of_word) ++word;
        push(id, token.empty() ? tokens_by_id[id] : std::string(token), ob, oe, lead, lead_bytes, trail, trail_bytes,
             false);
      });
  const size_t n = enc.ids.size() - first_token;
  enc.type_ids.resize(enc.ids.size(), 0);
  enc.special_tokens_mask.resize(enc.ids.size(), 0);
  enc.attention_mask.resize(enc.ids.size(), 1);
  enc.sequence_ids.insert(enc.sequence_ids.end(), n, sequence_id);
}

// HF's trim_offsets (ByteLevel process_offsets) on the tokens of one text after truncation (as
// HF's post-processor runs it), in both units: leading and trailing spaces leave the offsets,
// except the one leading space of the text's first token with add_prefix_space.
void Tokenizer::Impl::trim(Encoding& e, const std::vector<TokenNotes>& notes) const {
  if (!trim_offsets) return;
  for (size_t i = 0; i < e.size(); ++i) {
    const TokenNotes& t = notes[i];
    auto& [cs, ce] = e.offsets[i];
    auto& [bs, be] = e.byte_offsets[i];
    if (t.lead_chars > 0) {
      const bool is_first = i == 0 || cs == 0;
      if (!(is_first && trim_add_prefix_space && t.lead_chars == 1)) {
        cs = std::min<int64_t>(cs + t.lead_chars, ce);
        bs = std::min<int64_t>(bs + t.lead_bytes, be);
      }
    }
    if (t.trail_chars > 0 && ce >= t.trail_chars) {
      ce = std::max<int64_t>(ce - t.trail_chars, cs);
      be = std::max<int64_t>(be - t.trail_bytes, bs);
    }
  }
}

void Tokenizer::as_first_token(Encoding& e, size_t i) const {
  if (!impl_->trim_offsets || !impl_->trim_add_prefix_space || i >= e.size() || e.special_tokens_mask[i]) return;
  // HF counts a token's spaces on its string: U+0120 (a space byte) or white space.
  const std::string& token = e.tokens[i];
  size_t pos = 0, chars = 0, lead = 0, lead_bytes = 0;
  bool leading = true;
  while (pos < token.size()) {
    const size_t at = pos;
    const char32_t cp = unicode::next_code_point(token, pos);
    ++chars;
    if (leading && (cp == 0x120 || unicode::is_whitespace(cp))) {
      ++lead;
      lead_bytes = cp == 0x120 ? 1 : pos - at;  // (only the count of one matters below)
    } else {
      leading = false;
    }
  }
  if (lead != 1 || e.offsets[i].first == 0) return;
  // Trimmed, the space left the start; kept, the start moves back over it. A token that is the
  // space alone was [s+1, s+1] (its trailing space trimmed too) and becomes [s, s].
  e.offsets[i].first -= 1;
  e.byte_offsets[i].first -= static_cast<int64_t>(lead_bytes);
  if (chars == 1) {
    e.offsets[i].second -= 1;
    e.byte_offsets[i].second -= static_cast<int64_t>(lead_bytes);
  }
}

void Tokenizer::Impl::tokenize_words(std::span<const std::string> words, int8_t sequence_id,
                                     const EncodeOptions& options, const char* which, Encoding& enc,
                                     std::vector<TokenNotes>& notes) const {
  // HF's encode_single_sequence of a pre-tokenized input: each word encoded alone (added tokens,
  // pre-tokenizer with its prefix space, BPE; with truncation, do_tokenize's whole-piece pre-cut
  // of the word at max_length, except for text A under only_second), its tokens' word id its
  // index, their offsets into the word; then merged without moving the offsets (Encoding::merge,
  // growing_offsets false).
  const bool precut = options.max_length > 0 &&
                      !(options.truncation == TruncationStrategy::kOnlySecond && sequence_id == 0);
  std::string repaired;
  Encoding word;
  std::vector<TokenNotes> word_notes;
  for (size_t w = 0; w < words.size(); ++w) {
    std::string_view text = words[w];
    if (unicode::find_invalid_utf8(text)) {
      const std::string name = std::string("word ") + std::to_string(w + 1) + " of " + which;
      text = checked_text(text, options.invalid_utf8, repaired, name.c_str());
    }
    word = Encoding();
    word_notes.clear();
    tokenize(text, sequence_id, word, word_notes);
    if (precut) {
      const size_t n = precut_length(word, options.max_length, options.truncation_side, word_notes);
      keep_tokens(word, n, options.truncation_side);
      if (options.truncation_side == Side::kRight)
        word_notes.resize(n);
      else
        word_notes.erase(word_notes.begin(), word_notes.end() - static_cast<ptrdiff_t>(n));
    }
    std::fill(word.word_ids.begin(), word.word_ids.end(), static_cast<int32_t>(w));
    append_encoding(enc, word);
    notes.insert(notes.end(), word_notes.begin(), word_notes.end());
  }
}

// Checks and tokenizes A (then B), truncates them, then adds the special tokens.
Encoding Tokenizer::Impl::encode(const Input& a, const Input* b, const EncodeOptions& options) const {
  Encoding ea, eb;
  thread_local std::vector<TokenNotes> notes_a, notes_b;  // (kept between calls: no allocation per text)
  notes_a.clear(), notes_b.clear();
  std::string repaired;
  if (a.pretokenized)
    tokenize_words(a.words, 0, options, b ? "text A" : "text", ea, notes_a);
  else
    tokenize(checked_text(a.text, options.invalid_utf8, repaired, b ? "text A" : "text"), 0, ea, notes_a);
  if (b && b->pretokenized)
    tokenize_words(b->words, 1, options, "text B", eb, notes_b);
  else if (b)
    tokenize(checked_text(b->text, options.invalid_utf8, repaired, "text B"), 1, eb, notes_b);
  const std::vector<TemplatePiece>& layout = b ? pair_template : single_template;
  size_t added_count = 0;  // HF's post-processor added_tokens
  if (options.add_special_tokens)
    for (const TemplatePiece& piece : layout) added_count += piece.ids.size();
  if (options.max_length > 0) {
    truncate_inputs(ea, b ? &eb : nullptr, options, added_count, notes_a, notes_b, a.pretokenized,
                    b && b->pretokenized);
    const auto cut = [&](std::vector<TokenNotes>& t, size_t n) {
      if (options.truncation_side == Side::kRight)
        t.resize(n);
      else
        t.erase(t.begin(), t.end() - static_cast<ptrdiff_t>(n));
    };
    cut(notes_a, ea.size());
    if (b) cut(notes_b, eb.size());
  }
  trim(ea, notes_a);
  if (b) trim(eb, notes_b);
  // The layout: each text with its type id (RobertaProcessing sets every one to 0, RoBERTa having
  // one token type; TemplateProcessing the template's, with or without the special tokens; without
  // a post-processor, HF's encode gives text B type id 1), special tokens where asked.
  Encoding out;
  for (const TemplatePiece& piece : layout) {
    if (piece.sequence >= 0) {
      Encoding& e = piece.sequence == 0 ? ea : eb;
      std::fill(e.type_ids.begin(), e.type_ids.end(), piece.type_id);
      if (out.ids.empty())
        out = std::move(e);
      else
        append_encoding(out, e);
    } else if (options.add_special_tokens) {
      for (size_t i = 0; i < piece.ids.size(); ++i) push_special(out, piece.ids[i], piece.tokens[i], piece.type_id);
    }
  }
  out.n_sequences = b ? 2 : 1;
  return out;
}

// <s> text </s> (RobertaProcessing), [CLS] text [SEP] (BERT's), or the bare tokens without a
// post-processor.
Encoding Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  return impl_->encode({.text = text}, nullptr, options);
}

// <s> A </s></s> B </s> (RobertaProcessing), [CLS] A [SEP] B [SEP] (BERT's)
Encoding Tokenizer::encode_pair(std::string_view a, std::string_view b, const EncodeOptions& options) const {
  const Impl::Input second{.text = b};
  return impl_->encode({.text = a}, &second, options);
}

Encoding Tokenizer::encode_words(std::span<const std::string> words, const EncodeOptions& options) const {
  return impl_->encode({.words = words, .pretokenized = true}, nullptr, options);
}

Encoding Tokenizer::encode_words_pair(std::span<const std::string> a, std::span<const std::string> b,
                                      const EncodeOptions& options) const {
  const Impl::Input second{.words = b, .pretokenized = true};
  return impl_->encode({.words = a, .pretokenized = true}, &second, options);
}

// The ids tokenize() gives, without offsets, token strings or special tokens.
void Tokenizer::encode_ids(std::string_view text, std::vector<int32_t>& out, InvalidUtf8 invalid_utf8) const {
  std::string repaired;
  text = checked_text(text, invalid_utf8, repaired, "text");
  impl_->for_each_piece(
      text, [&](int index, size_t, size_t, std::string_view, bool) { out.push_back(impl_->added.tokens[index].id); },
      [&](int32_t id, size_t, size_t, uint32_t, uint32_t, uint32_t, uint32_t, bool, std::string_view) {
        out.push_back(id);
      });
}

}  // namespace roberta
