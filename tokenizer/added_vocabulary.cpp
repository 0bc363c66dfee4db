#include "added_vocabulary.h"

#include <algorithm>
#include <string>

#include "tokenizer_impl.h"
#include "unicode.h"

namespace roberta {

using enum ErrorKind;

// Groups the tokens by pass and first byte, longest first (so the first match is the longest).
// HF matches a normalized token by its content normalized as the text is (AddedVocabulary's
// normalized trie); one whose normalized content is empty never matches.
void AddedVocabulary::index(const std::function<std::string(std::string_view)>& normalize) {
  for (auto& table : by_first_byte_)
    for (auto& v : table) v.clear();
  match_text_.clear();
  has_normalized_ = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const bool normalized = tokens[i].normalized;
    match_text_.push_back(normalized && normalize ? normalize(tokens[i].content) : tokens[i].content);
    has_normalized_ = has_normalized_ || normalized;
    if (!match_text_.back().empty())
      by_first_byte_[normalized ? 1 : 0][static_cast<unsigned char>(match_text_.back()[0])].push_back(
          static_cast<int>(i));
  }
  for (auto& table : by_first_byte_)
    for (auto& v : table)
      std::stable_sort(v.begin(), v.end(),
                       [&](int x, int y) { return match_text_[x].size() > match_text_[y].size(); });
}

// Finds added tokens of one pass in text[from, to), leftmost-longest, as HF's AddedVocabulary does,
// and appends the segments (plain text and matches) covering [from, to).
void AddedVocabulary::match(std::string_view text, size_t from, size_t to, int pass, std::vector<Segment>& out) const {
  const auto& table = by_first_byte_[pass];
  size_t start_offset = from;  // end of the previous match
  size_t p = from;
  while (p < to) {
    const auto& candidates = table[static_cast<unsigned char>(text[p])];
    int found = -1;
    for (int c : candidates) {
      const std::string& content = match_text_[c];
      if (content.size() <= to - p && text.compare(p, content.size(), content) == 0) {
        found = c;
        break;
      }
    }
    if (found < 0) {
      ++p;
      continue;
    }
    const AddedToken& tok = tokens[found];
    size_t start = p, stop = p + match_text_[found].size();
    p = stop;
    if (start < start_offset) continue;  // overlaps what the previous match's rstrip took
    if (tok.single_word) {
      // HF tests ^\w / \w$ with Rust's regex crate
      const auto is_word_char = [](char32_t cp) { return (unicode::char_class(cp) & unicode::kWord) != 0; };
      bool word_before = false, word_after = false;
      if (start > from) {
        size_t q = start - 1;
        while (q > from && unicode::is_continuation_byte(text[q])) --q;
        size_t i = q;
        word_before = is_word_char(unicode::next_code_point(text, i));
      }
      if (stop < to) {
        size_t i = stop;
        word_after = is_word_char(unicode::next_code_point(text, i));
      }
      if (word_before || word_after) continue;
    }
    if (tok.lstrip) {
      size_t s = start;
      while (s > start_offset) {
        size_t q = s - 1;
        while (q > start_offset && unicode::is_continuation_byte(text[q])) --q;
        size_t i = q;
        if (!unicode::is_whitespace(unicode::next_code_point(text, i))) break;
        s = q;
      }
      start = s;
    }
    if (tok.rstrip) {
      while (stop < to) {
        size_t i = stop;
        if (!unicode::is_whitespace(unicode::next_code_point(text, i))) break;
        stop = i;
      }
      p = stop;
    }
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, found});
    start_offset = stop;
  }
  if (start_offset < to) out.push_back({start_offset, to, -1});
}

// The non-normalized pass over the whole text, then the normalized pass over the plain text left.
void AddedVocabulary::split(std::string_view text, std::vector<Segment>& out) const {
  std::vector<Segment> first;
  match(text, 0, text.size(), 0, first);
  for (const Segment& s : first) {
    if (s.added >= 0)
      out.push_back(s);
    else
      match(text, s.begin, s.end, 1, out);
  }
}

// Ids beyond the vocabulary are allowed (HF appends added tokens), within the same bound on holes.
// An added token whose text the vocabulary already has takes the vocabulary's id, as HF's
// AddedVocabulary gives it (the id the file declares then names no token).
void Tokenizer::Impl::finish_added_tokens(const std::string& source, const Roles& roles) {
  const size_t max_id = 2 * (has_id.size() + added.tokens.size()) + 1024;
  for (AddedToken& t : added.tokens) {
    if (t.content.empty())
      throw Error(source + ": added token with id " + std::to_string(t.id) + " has empty content", kInvalidModel);
    if (t.id < 0 || static_cast<size_t>(t.id) > max_id)
      throw Error(source + ": added token \"" + t.content + "\" has id " + std::to_string(t.id) + " out of range",
                  kInvalidModel);
    const auto it = ids_by_token.find(t.content);
    if (it != ids_by_token.end()) {
      t.id = it->second;
    } else {
      if (static_cast<size_t>(t.id) < has_id.size() && has_id[t.id])
        throw Error(source + ": added token \"" + t.content + "\" has id " + std::to_string(t.id) +
                    ", which is already the id of \"" + tokens_by_id[t.id] + "\"", kInvalidModel);
      if (has_id.size() <= static_cast<size_t>(t.id)) {
        has_id.resize(t.id + 1, 0);
        tokens_by_id.resize(t.id + 1);
      }
      has_id[t.id] = 1;
      tokens_by_id[t.id] = t.content;
      ids_by_token.emplace(t.content, t.id);
    }
  }
  special_by_id.assign(has_id.size(), 0);
  for (const AddedToken& t : added.tokens)
    if (t.special) special_by_id[t.id] = 1;
  decoded_added.clear();
  if (normalizes()) {
    added.index([&](std::string_view content) {
      NormalizedText n;
      normalize(content, 0, content.size(), n);
      return n.text;
    });
    for (size_t i = 0; i < added.tokens.size(); ++i)
      if (added.tokens[i].normalized && added.match_text(i) != added.tokens[i].content)
        decoded_added[added.tokens[i].id] = added.match_text(i);
  } else {
    added.index();
  }
  const auto find = [&](const char* token) -> std::optional<int32_t> {
    const auto it = ids_by_token.find(std::string_view(token));
    return it == ids_by_token.end() ? std::nullopt : std::optional<int32_t>(it->second);
  };
  // A role the folder's config names takes that token where the vocabulary has it; else RoBERTa's
  // token, then BERT's.
  const auto role = [&](const std::optional<std::string>& named, const char* roberta,
                        const char* bert) -> std::optional<int32_t> {
    if (named)
      if (auto id = find(named->c_str())) return id;
    if (auto id = find(roberta)) return id;
    return find(bert);
  };
  if (auto id = role(roles.pad_token, "<pad>", "[PAD]")) {
    pad_id = *id;
    pad_token = tokens_by_id[*id];
  }
  mask_id = role(roles.mask_token, "<mask>", "[MASK]");
  if (!cls_from_layout)
    if (auto id = role(std::nullopt, "<s>", "[CLS]")) cls_id = *id;
  if (!sep_from_layout)
    if (auto id = role(std::nullopt, "</s>", "[SEP]")) sep_id = *id;
  if (roles.unk_token) {
    if (auto id = find(roles.unk_token->c_str())) unk_id = id;
  } else if (!unk_id) {
    unk_id = find("<unk>");
  }
}

}  // namespace roberta
