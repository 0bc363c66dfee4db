// HF's WordPiece (greedy longest match, "##" continuations, [UNK] for a word it cannot cover or
// longer than max_input_chars_per_word) after BertNormalizer and BertPreTokenizer.
#include "wordpiece.h"

#include "bert_normalizer.h"
#include "unicode.h"

namespace roberta {

template <class ForEachChar>
void WordPieceModel::tokenize_chars(ForEachChar&& for_each_char, std::vector<WordPieceToken>& out) const {
  thread_local Word word;
  word.text.clear(), word.char_of_byte.clear(), word.source.clear();
  const auto flush = [&] {
    if (word.text.empty()) return;
    tokenize_word(word, out);
    word.text.clear(), word.char_of_byte.clear(), word.source.clear();
  };
  const auto add = [&](char32_t cp, size_t ob, size_t oe) {
    const size_t at = word.text.size();
    unicode::append_utf8(word.text, cp);
    word.char_of_byte.insert(word.char_of_byte.end(), word.text.size() - at, static_cast<uint32_t>(word.source.size()));
    word.source.emplace_back(ob, oe);
  };
  // BertPreTokenizer on the normalized characters: white space ends a word, punctuation (and,
  // with handle_chinese_chars, a CJK ideograph, which BertNormalizer puts spaces around) is one.
  auto pre_tokenize = [&](char32_t cp, size_t ob, size_t oe) {
    if (unicode::is_whitespace(cp)) return flush();  // Rust's char::is_whitespace (\t \n \r included)
    const bool alone = unicode::is_bert_punctuation(cp) || (handle_chinese_chars && unicode::is_chinese_char(cp));
    if (alone) flush();
    add(cp, ob, oe);
    if (alone) flush();
  };
  for_each_char(pre_tokenize);
  flush();
}

bool WordPieceModel::cleaned_away(char32_t cp) const {
  return clean_text && (cp == 0 || cp == 0xFFFD || unicode::is_bert_control(cp));
}

void WordPieceModel::tokenize(std::string_view text, size_t begin, size_t end, std::vector<WordPieceToken>& out) const {
  tokenize_chars(
      [&](auto& pre_tokenize) {
        if (!lowercase && !strip_accents) {
          for (size_t i = begin; i < end;) {
            const size_t ob = i;
            const char32_t cp = unicode::next_code_point(text, i);
            if (!cleaned_away(cp)) pre_tokenize(cp, ob, i);
          }
          return;
        }
        BertCaseFolder folder(strip_accents, lowercase, pre_tokenize);
        for (size_t i = begin; i < end;) {
          const size_t ob = i;
          const char32_t cp = unicode::next_code_point(text, i);
          if (!cleaned_away(cp)) folder.push(cp, ob, i);
        }
        folder.finish();
      },
      out);
}

void WordPieceModel::normalize(std::string_view text, size_t begin, size_t end, NormalizedText& out) const {
  out.text.clear(), out.source.clear();
  auto append = [&](char32_t cp, size_t ob, size_t oe) {
    const size_t at = out.text.size();
    unicode::append_utf8(out.text, cp);
    out.source.insert(out.source.end(), out.text.size() - at, {ob, oe});
  };
  BertCaseFolder folder(strip_accents, lowercase, append);
  for (size_t i = begin; i < end;) {
    const size_t ob = i;
    char32_t cp = unicode::next_code_point(text, i);
    if (cleaned_away(cp)) continue;
    if (clean_text && unicode::is_whitespace(cp)) cp = ' ';
    const bool spaced = handle_chinese_chars && unicode::is_chinese_char(cp);  // " c ", each with c's span
    if (spaced) folder.push(' ', ob, i);
    folder.push(cp, ob, i);
    if (spaced) folder.push(' ', ob, i);
  }
  folder.finish();
}

void WordPieceModel::tokenize_normalized(const NormalizedText& n, size_t from, size_t to,
                                         std::vector<WordPieceToken>& out) const {
  tokenize_chars(
      [&](auto& pre_tokenize) {
        for (size_t i = from; i < to;) {
          const auto [ob, oe] = n.source[i];
          const char32_t cp = unicode::next_code_point(n.text, i);
          pre_tokenize(cp, ob, oe);
        }
      },
      out);
}

void WordPieceModel::tokenize_word(const Word& w, std::vector<WordPieceToken>& out) const {
  const size_t n = w.text.size();
  if (w.source.size() > max_input_chars_per_word) {
    out.push_back({unk_id, w.source.front().first, w.source.back().second, true});
    return;
  }
  const size_t first = out.size();
  thread_local std::string key;
  size_t start = 0;
  while (start < n) {
    size_t stop = n;
    int32_t id = -1;
    while (start < stop) {
      std::string_view piece(w.text.data() + start, stop - start);
      if (start > 0) {
        key.assign(continuing_subword_prefix);
        key.append(piece);
        piece = key;
      }
      if (const auto it = vocab.find(piece); it != vocab.end()) {
        id = it->second;
        break;
      }
      --stop;  // back over the last character
      while (stop > start && unicode::is_continuation_byte(w.text[stop])) --stop;
    }
    if (id < 0) {  // no piece fits: the whole word is [UNK]
      out.resize(first);
      out.push_back({unk_id, w.source.front().first, w.source.back().second, true});
      return;
    }
    out.push_back({id, w.source[w.char_of_byte[start]].first, w.source[w.char_of_byte[stop - 1]].second,
                   start == 0});
    start = stop;
  }
}

}  // namespace roberta
