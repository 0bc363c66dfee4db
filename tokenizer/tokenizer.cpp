#include "roberta/tokenizer.h"

#include <algorithm>
#include <array>
#include <mutex>
#include <atomic>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "bpe.h"
#include "byte_level.h"
#include "pre_tokenizer.h"
#include "unicode.h"

namespace roberta {

using json = nlohmann::json;

namespace {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(path.string() + ": read error");
  return ss.str();
}

json parse_json(const std::string& text, const std::string& name) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(name + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const json::exception& e) {  // e.g. a number too large for a double
    throw Error(name + ": invalid JSON: " + e.what());
  }
}

bool is_whitespace_cp(char32_t cp) { return unicode::char_class(cp) & unicode::kWhitespace; }

// A piece of input text: either plain text to pre-tokenize and BPE, or one added token.
struct Segment {
  size_t begin, end;
  int added = -1;  // index into Impl::added
};

}  // namespace

struct Tokenizer::Impl {
  std::unique_ptr<BpeModel> bpe;
  std::vector<std::string> tokens_by_id;  // "" where no token has the id
  std::vector<uint8_t> has_id;
  std::vector<uint8_t> special_by_id;
  std::vector<uint8_t> is_added_id;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids_by_token;
  std::vector<AddedToken> added;
  // Added tokens by first byte, longest first, for the non-normalized [0] and normalized [1] pass.
  std::array<std::array<std::vector<int>, 256>, 2> added_by_first_byte;

  bool add_prefix_space = false;
  bool use_regex = true;
  bool roberta_specials = true;  // RobertaProcessing adds <s> ... </s>
  bool trim_offsets = true;
  bool trim_add_prefix_space = false;
  int32_t cls_id = 0, sep_id = 2, pad_id = 1;
  std::string cls_token = "<s>", sep_token = "</s>", pad_token = "<pad>";
  std::optional<int32_t> mask_id;

  void finish_added_tokens(const std::string& source);
  void split_added(std::string_view text, std::vector<Segment>& out) const;
  void match_added(std::string_view text, size_t from, size_t to, int pass, std::vector<Segment>& out) const;
  template <class OnToken>
  void tokenize_text(std::string_view text, size_t begin, size_t end, OnToken&& on_token) const;
  void tokenize(std::string_view text, int8_t sequence_id, Encoding& enc) const;
  Encoding encode(std::string_view a, const std::string_view* b, const EncodeOptions& options) const;
};

// ---------------------------------------------------------------- loading

static std::vector<std::pair<std::string, std::string>> parse_merges_txt(const std::string& text, const std::string& name) {
  std::vector<std::pair<std::string, std::string>> merges;
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.starts_with("#version"))) continue;
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos || space == 0 ||
        space + 1 == line.size())
      throw Error(name + ": line " + std::to_string(line_no) + ": expected two tokens separated by one space");
    merges.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
  }
  return merges;
}

static void add_vocab(Tokenizer::Impl& impl, const std::string& token, const json& id_value, const std::string& where,
                      size_t max_id) {
  if (!id_value.is_number_integer())
    throw Error(where + ": id of token \"" + token + "\" is not an integer");
  const int64_t id = id_value.get<int64_t>();
  if (id < 0 || static_cast<size_t>(id) > max_id)
    throw Error(where + ": id " + std::to_string(id) + " of token \"" + token + "\" is out of range [0, " +
                std::to_string(max_id) + "]");
  if (impl.has_id.size() <= static_cast<size_t>(id)) {
    impl.has_id.resize(id + 1, 0);
    impl.tokens_by_id.resize(id + 1);
  }
  if (impl.has_id[id])
    throw Error(where + ": tokens \"" + impl.tokens_by_id[id] + "\" and \"" + token + "\" have the same id " +
                std::to_string(id));
  impl.has_id[id] = 1;
  impl.tokens_by_id[id] = token;
  impl.ids_by_token.emplace(token, static_cast<int32_t>(id));
}

static std::unordered_map<std::string, int32_t> load_vocab(Tokenizer::Impl& impl, const json& vocab, const std::string& where) {
  if (!vocab.is_object()) throw Error(where + ": expected a JSON object of token -> id");
  // Ids may have holes, but never more than the number of tokens allows (no allocation is sized
  // from an unchecked number).
  const size_t max_id = 2 * vocab.size() + 1024;
  std::unordered_map<std::string, int32_t> model_vocab;
  model_vocab.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    add_vocab(impl, token, id, where, max_id);
    model_vocab.emplace(token, id.get<int32_t>());
  }
  return model_vocab;
}

void Tokenizer::Impl::finish_added_tokens(const std::string& source) {
  const size_t max_id = 2 * (has_id.size() + added.size()) + 1024;
  for (const AddedToken& t : added) {
    if (t.content.empty()) throw Error(source + ": added token with id " + std::to_string(t.id) + " has empty content");
    if (t.id < 0 || static_cast<size_t>(t.id) > max_id)
      throw Error(source + ": added token \"" + t.content + "\" has id " + std::to_string(t.id) + " out of range");
    const auto it = ids_by_token.find(t.content);
    if (it != ids_by_token.end() && it->second != t.id)
      throw Error(source + ": added token \"" + t.content + "\" has id " + std::to_string(t.id) +
                  " but the vocabulary gives it id " + std::to_string(it->second));
    if (it == ids_by_token.end()) {
      if (static_cast<size_t>(t.id) < has_id.size() && has_id[t.id])
        throw Error(source + ": added token \"" + t.content + "\" has id " + std::to_string(t.id) +
                    ", which is already the id of \"" + tokens_by_id[t.id] + "\"");
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
  is_added_id.assign(has_id.size(), 0);
  for (int pass = 0; pass < 2; ++pass)
    for (auto& v : added_by_first_byte[pass]) v.clear();
  for (size_t i = 0; i < added.size(); ++i) {
    if (added[i].special) special_by_id[added[i].id] = 1;
    is_added_id[added[i].id] = 1;
    added_by_first_byte[added[i].normalized ? 1 : 0][static_cast<unsigned char>(added[i].content[0])].push_back(
        static_cast<int>(i));
  }
  for (auto& table : added_by_first_byte)
    for (auto& v : table)
      std::stable_sort(v.begin(), v.end(), [&](int x, int y) { return added[x].content.size() > added[y].content.size(); });
  const auto find = [&](const char* token) -> std::optional<int32_t> {
    const auto it = ids_by_token.find(std::string_view(token));
    return it == ids_by_token.end() ? std::nullopt : std::optional<int32_t>(it->second);
  };
  if (auto id = find("<pad>")) pad_id = *id;
  mask_id = find("<mask>");
}

Tokenizer Tokenizer::from_vocab_merges(const std::filesystem::path& vocab_json, const std::filesystem::path& merges_txt) {
  return from_vocab_merges_text(read_file(vocab_json), read_file(merges_txt), vocab_json.string(), merges_txt.string());
}

Tokenizer Tokenizer::from_vocab_merges_text(const std::string& vocab_text, const std::string& merges_text,
                                            const std::string& vocab_name, const std::string& merges_name) {
  auto impl = std::make_shared<Impl>();
  const json vocab = parse_json(vocab_text, vocab_name);
  const auto model_vocab = load_vocab(*impl, vocab, vocab_name);
  const auto merges = parse_merges_txt(merges_text, merges_name);
  const auto require = [&](const char* token) {
    const auto it = model_vocab.find(token);
    if (it == model_vocab.end()) throw Error(vocab_name + ": special token \"" + std::string(token) + "\" is missing");
    return it->second;
  };
  impl->bpe = std::make_unique<BpeModel>(model_vocab, merges, std::nullopt, false, merges_name);
  // RobertaTokenizer's defaults: <mask> strips the whitespace on its left.
  for (const char* t : {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}) {
    AddedToken a;
    a.content = t;
    a.id = require(t);
    a.lstrip = a.content == "<mask>";
    impl->added.push_back(a);
  }
  impl->cls_id = require("<s>");
  impl->sep_id = require("</s>");
  impl->finish_added_tokens(vocab_name);
  return Tokenizer(std::move(impl));
}

static const json& field(const json& obj, const char* key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key)) throw Error(where + ": missing field \"" + key + "\"");
  return obj.at(key);
}

template <class T>
static T get_or(const json& obj, const char* key, T fallback, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return fallback;
  try {
    return obj.at(key).get<T>();
  } catch (const json::exception&) {
    throw Error(where + ": field \"" + key + "\" has the wrong type");
  }
}

Tokenizer Tokenizer::from_tokenizer_json(const std::filesystem::path& path) {
  return from_tokenizer_json_text(read_file(path), path.string());
}

Tokenizer Tokenizer::from_tokenizer_json_text(const std::string& text, const std::string& name) {
  auto impl = std::make_shared<Impl>();
  const json doc = parse_json(text, name);
  if (!doc.is_object()) throw Error(name + ": expected a JSON object");

  const json& model = field(doc, "model", name);
  const std::string model_type = get_or<std::string>(model, "type", "BPE", name + ": model");
  if (model_type != "BPE") throw Error(name + ": model.type \"" + model_type + "\" is not supported (only BPE)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!get_or<std::string>(model, key, "", name + ": model").empty())
      throw Error(name + ": model." + key + " is not supported (byte-level BPE has none)");
  const auto model_vocab = load_vocab(*impl, field(model, "vocab", name + ": model"), name + ": model.vocab");

  const json& merges_json = field(model, "merges", name + ": model");
  if (!merges_json.is_array()) throw Error(name + ": model.merges must be an array");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(merges_json.size());
  for (size_t i = 0; i < merges_json.size(); ++i) {
    const json& m = merges_json[i];
    const std::string where = name + ": model.merges[" + std::to_string(i) + "]";
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        throw Error(where + ": expected \"left right\"");
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      throw Error(where + ": expected a string \"left right\" or a pair of strings");
    }
  }
  std::optional<int32_t> unk_id;
  if (const auto unk = get_or<std::string>(model, "unk_token", "", name + ": model"); !unk.empty()) {
    const auto it = model_vocab.find(unk);
    if (it == model_vocab.end()) throw Error(name + ": model.unk_token \"" + unk + "\" is not in the vocabulary");
    unk_id = it->second;
  }
  impl->bpe = std::make_unique<BpeModel>(model_vocab, merges, unk_id, get_or<bool>(model, "fuse_unk", false, name),
                                         name + ": model.merges");

  if (doc.contains("added_tokens") && !doc["added_tokens"].is_null()) {
    const json& list = doc["added_tokens"];
    if (!list.is_array()) throw Error(name + ": added_tokens must be an array");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string where = name + ": added_tokens[" + std::to_string(i) + "]";
      const json& t = list[i];
      AddedToken a;
      if (!field(t, "content", where).is_string()) throw Error(where + ": content must be a string");
      a.content = t["content"].get<std::string>();
      if (!field(t, "id", where).is_number_integer() || t["id"].get<int64_t>() < 0 || t["id"].get<int64_t>() > INT32_MAX)
        throw Error(where + ": id must be a non-negative 32-bit integer");
      a.id = t["id"].get<int32_t>();
      a.single_word = get_or<bool>(t, "single_word", false, where);
      a.lstrip = get_or<bool>(t, "lstrip", false, where);
      a.rstrip = get_or<bool>(t, "rstrip", false, where);
      a.normalized = get_or<bool>(t, "normalized", true, where);
      a.special = get_or<bool>(t, "special", false, where);
      impl->added.push_back(a);
    }
  }

  if (doc.contains("normalizer") && !doc["normalizer"].is_null())
    throw Error(name + ": normalizer \"" + get_or<std::string>(doc["normalizer"], "type", "?", name) +
                "\" is not supported (RoBERTa tokenizers have none)");

  const auto read_byte_level = [&](const json& pt, const std::string& where) {
    impl->add_prefix_space = get_or<bool>(pt, "add_prefix_space", false, where);
    impl->use_regex = get_or<bool>(pt, "use_regex", true, where);
  };
  if (doc.contains("pre_tokenizer") && !doc["pre_tokenizer"].is_null()) {
    const json& pt = doc["pre_tokenizer"];
    const std::string type = get_or<std::string>(pt, "type", "", name + ": pre_tokenizer");
    if (type == "ByteLevel") {
      read_byte_level(pt, name + ": pre_tokenizer");
    } else if (type == "Sequence" && pt.contains("pretokenizers") && pt["pretokenizers"].is_array() &&
               pt["pretokenizers"].size() == 1 &&
               get_or<std::string>(pt["pretokenizers"][0], "type", "", name) == "ByteLevel") {
      read_byte_level(pt["pretokenizers"][0], name + ": pre_tokenizer.pretokenizers[0]");
    } else {
      throw Error(name + ": pre_tokenizer \"" + type + "\" is not supported (only ByteLevel)");
    }
  } else {
    throw Error(name + ": pre_tokenizer is missing (a byte-level BPE needs ByteLevel)");
  }

  impl->roberta_specials = false;
  impl->trim_offsets = false;
  if (doc.contains("post_processor") && !doc["post_processor"].is_null()) {
    const json& pp = doc["post_processor"];
    const std::string where = name + ": post_processor";
    const std::string type = get_or<std::string>(pp, "type", "", where);
    if (type == "RobertaProcessing") {
      impl->roberta_specials = true;
      const auto special = [&](const char* key, std::string& token, int32_t& id) {
        const json& v = field(pp, key, where);
        if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_number_integer() ||
            v[1].get<int64_t>() < 0 || v[1].get<int64_t>() > INT32_MAX)
          throw Error(where + "." + key + ": expected [token, id]");
        token = v[0].get<std::string>();
        id = v[1].get<int32_t>();
      };
      special("cls", impl->cls_token, impl->cls_id);
      special("sep", impl->sep_token, impl->sep_id);
      impl->trim_offsets = get_or<bool>(pp, "trim_offsets", true, where);
      impl->trim_add_prefix_space = get_or<bool>(pp, "add_prefix_space", true, where);
    } else if (type == "ByteLevel") {
      impl->trim_offsets = get_or<bool>(pp, "trim_offsets", true, where);
      impl->trim_add_prefix_space = get_or<bool>(pp, "add_prefix_space", true, where);
    } else {
      throw Error(where + " \"" + type + "\" is not supported (RobertaProcessing or ByteLevel)");
    }
  }
  if (doc.contains("decoder") && !doc["decoder"].is_null()) {
    const std::string type = get_or<std::string>(doc["decoder"], "type", "", name + ": decoder");
    if (type != "ByteLevel") throw Error(name + ": decoder \"" + type + "\" is not supported (only ByteLevel)");
  }
  impl->finish_added_tokens(name);
  for (int32_t id : {impl->cls_id, impl->sep_id})
    if (id < 0 || static_cast<size_t>(id) >= impl->has_id.size() || !impl->has_id[id])
      throw Error(name + ": post_processor special token id " + std::to_string(id) + " is not in the vocabulary");
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw Error(dir.string() + ": model folder not found");
  if (std::filesystem::exists(dir / "tokenizer.json", ec)) return from_tokenizer_json(dir / "tokenizer.json");
  if (std::filesystem::exists(dir / "vocab.json", ec) && std::filesystem::exists(dir / "merges.txt", ec))
    return from_vocab_merges(dir / "vocab.json", dir / "merges.txt");
  throw Error(dir.string() + ": no tokenizer found (expected tokenizer.json, or vocab.json and merges.txt)");
}

// ---------------------------------------------------------------- added tokens

// Finds added tokens of one pass in text[from, to), leftmost-longest, as HF's AddedVocabulary does,
// and appends the segments (plain text and matches) covering [from, to).
void Tokenizer::Impl::match_added(std::string_view text, size_t from, size_t to, int pass,
                                  std::vector<Segment>& out) const {
  const auto& table = added_by_first_byte[pass];
  size_t start_offset = from;  // end of the previous match
  size_t p = from;
  while (p < to) {
    const auto& candidates = table[static_cast<unsigned char>(text[p])];
    int found = -1;
    for (int c : candidates) {
      const std::string& content = added[c].content;
      if (content.size() <= to - p && text.compare(p, content.size(), content) == 0) {
        found = c;
        break;
      }
    }
    if (found < 0) {
      ++p;
      continue;
    }
    const AddedToken& tok = added[found];
    size_t start = p, stop = p + tok.content.size();
    p = stop;
    if (start < start_offset) continue;  // overlaps what the previous match's rstrip took
    if (tok.single_word) {
      const auto is_word_char = [](char32_t cp) {
        return cp == '_' || (unicode::char_class(cp) & (unicode::kLetter | unicode::kNumber | unicode::kMark));
      };
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
        if (!is_whitespace_cp(unicode::next_code_point(text, i))) break;
        s = q;
      }
      start = s;
    }
    if (tok.rstrip) {
      while (stop < to) {
        size_t i = stop;
        if (!is_whitespace_cp(unicode::next_code_point(text, i))) break;
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

void Tokenizer::Impl::split_added(std::string_view text, std::vector<Segment>& out) const {
  std::vector<Segment> first;
  match_added(text, 0, text.size(), 0, first);
  for (const Segment& s : first) {
    if (s.added >= 0)
      out.push_back(s);
    else
      match_added(text, s.begin, s.end, 1, out);
  }
}

// ---------------------------------------------------------------- encoding

// Calls on_token(id, begin, end, leading_spaces, trailing_spaces, first_of_word) for the BPE tokens
// of the plain text text[begin, end); begin/end are byte offsets into `text` widened to whole
// characters.
template <class OnToken>
void Tokenizer::Impl::tokenize_text(std::string_view text, size_t begin, size_t end, OnToken&& on_token) const {
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
      while (ob > begin && ob < end && unicode::is_continuation_byte(text[ob])) --ob;
      while (oe < end && oe > ob && unicode::is_continuation_byte(text[oe])) ++oe;
      uint32_t lead = 0, trail = 0;
      while (pb + lead < pe && piece_text[pb + lead] == ' ') ++lead;
      while (pe - trail > pb && piece_text[pe - trail - 1] == ' ') ++trail;
      on_token(piece.id, ob, oe, lead, trail, first_of_word);
      first_of_word = false;
    }
  };
  if (use_regex)
    split_gpt2(piece_text, on_word);
  else if (!piece_text.empty())
    on_word(0, piece_text.size());
}

void Tokenizer::Impl::tokenize(std::string_view text, int8_t sequence_id, Encoding& enc) const {
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
  // HF's trim_offsets (ByteLevel process_offsets), applied per token in both units.
  const auto push = [&](int32_t id, std::string token, size_t ob, size_t oe, uint32_t lead_chars, uint32_t lead_bytes,
                        uint32_t trail_chars, uint32_t trail_bytes) {
    int64_t cs = to_char(ob), ce = to_char(oe);
    auto bs = static_cast<int64_t>(ob), be = static_cast<int64_t>(oe);
    if (trim_offsets) {
      if (lead_chars > 0) {
        const bool is_first = enc.ids.size() == first_token || cs == 0;
        if (!(is_first && trim_add_prefix_space && lead_chars == 1)) {
          cs = std::min<int64_t>(cs + lead_chars, ce);
          bs = std::min<int64_t>(bs + lead_bytes, be);
        }
      }
      if (trail_chars > 0 && ce >= trail_chars) {
        ce = std::max<int64_t>(ce - trail_chars, cs);
        be = std::max<int64_t>(be - trail_bytes, bs);
      }
    }
    enc.ids.push_back(id);
    enc.tokens.push_back(std::move(token));
    enc.offsets.emplace_back(cs, ce);
    enc.byte_offsets.emplace_back(bs, be);
    enc.word_ids.push_back(word);
  };
  std::vector<Segment> segments;
  split_added(text, segments);
  for (const Segment& seg : segments) {
    if (seg.added >= 0) {
      // The token string is the matched text, stripped whitespace included (as HF shows it).
      const std::string_view matched = text.substr(seg.begin, seg.end - seg.begin);
      uint32_t lead_c = 0, lead_b = 0, trail_c = 0, trail_b = 0;
      for (size_t i = 0; i < matched.size();) {
        const size_t at = i;
        const char32_t cp = unicode::next_code_point(matched, i);
        if (!(is_whitespace_cp(cp) || cp == 0x120)) break;
        ++lead_c, lead_b += static_cast<uint32_t>(i - at);
      }
      for (size_t e = matched.size(); e > 0;) {
        size_t q = e - 1;
        while (q > 0 && unicode::is_continuation_byte(matched[q])) --q;
        size_t i = q;
        const char32_t cp = unicode::next_code_point(matched, i);
        if (!(is_whitespace_cp(cp) || cp == 0x120)) break;
        ++trail_c, trail_b += static_cast<uint32_t>(e - q);
        e = q;
      }
      ++word;
      push(added[seg.added].id, std::string(matched), seg.begin, seg.end, lead_c, lead_b, trail_c, trail_b);
    } else {
      tokenize_text(text, seg.begin, seg.end,
                    [&](int32_t id, size_t ob, size_t oe, uint32_t lead, uint32_t trail, bool first_of_word) {
                      if (first_of_word) ++word;
                      push(id, tokens_by_id[id], ob, oe, lead, lead, trail, trail);
                    });
    }
  }
  const size_t n = enc.ids.size() - first_token;
  enc.type_ids.resize(enc.ids.size(), 0);
  enc.special_tokens_mask.resize(enc.ids.size(), 0);
  enc.attention_mask.resize(enc.ids.size(), 1);
  enc.sequence_ids.insert(enc.sequence_ids.end(), n, sequence_id);
}

namespace {

// Keeps `n` tokens of `e`, dropping from the end (kRight) or the start (kLeft).
void truncate_encoding(Encoding& e, size_t n, Side side) {
  if (e.size() <= n) return;
  const auto cut = [&](auto& v) {
    if (side == Side::kRight)
      v.resize(n);
    else
      v.erase(v.begin(), v.end() - static_cast<ptrdiff_t>(n));
  };
  cut(e.ids), cut(e.type_ids), cut(e.tokens), cut(e.offsets), cut(e.byte_offsets);
  cut(e.special_tokens_mask), cut(e.attention_mask), cut(e.sequence_ids), cut(e.word_ids);
}

// HF (0.23) first cuts each input to whole words while tokenizing: walking from the kept side,
// it stops after the first ordinary (not added-token) word at which `limit` tokens are reached.
size_t word_precut_length(const Encoding& e, size_t limit, Side side, const std::vector<uint8_t>& is_added_id) {
  const size_t n = e.size();
  const auto at = [&](size_t k) { return side == Side::kRight ? k : n - 1 - k; };
  size_t k = 0;
  while (k < n) {
    const int32_t w = e.word_ids[at(k)];
    const int32_t id = e.ids[at(k)];
    const bool added = id >= 0 && static_cast<size_t>(id) < is_added_id.size() && is_added_id[id];
    while (k < n && e.word_ids[at(k)] == w) ++k;
    if (!added && k >= limit) break;
  }
  return k;
}

void push_special(Encoding& e, int32_t id, const std::string& token) {
  e.ids.push_back(id);
  e.type_ids.push_back(0);
  e.tokens.push_back(token);
  e.offsets.emplace_back(0, 0);
  e.byte_offsets.emplace_back(0, 0);
  e.special_tokens_mask.push_back(1);
  e.attention_mask.push_back(1);
  e.sequence_ids.push_back(-1);
  e.word_ids.push_back(-1);
}

void append_encoding(Encoding& dst, const Encoding& src) {
  const auto add = [](auto& d, const auto& s) { d.insert(d.end(), s.begin(), s.end()); };
  add(dst.ids, src.ids), add(dst.type_ids, src.type_ids), add(dst.tokens, src.tokens);
  add(dst.offsets, src.offsets), add(dst.byte_offsets, src.byte_offsets);
  add(dst.special_tokens_mask, src.special_tokens_mask), add(dst.attention_mask, src.attention_mask);
  add(dst.sequence_ids, src.sequence_ids), add(dst.word_ids, src.word_ids);
}

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

Encoding Tokenizer::Impl::encode(std::string_view a, const std::string_view* b, const EncodeOptions& options) const {
  std::string repaired_a, repaired_b;
  Encoding ea, eb;
  tokenize(checked_text(a, options.invalid_utf8, repaired_a, b ? "text A" : "text"), 0, ea);
  if (b) tokenize(checked_text(*b, options.invalid_utf8, repaired_b, "text B"), 1, eb);
  const bool specials = options.add_special_tokens && roberta_specials;
  if (options.max_length > 0) {
    const size_t added_count = specials ? (b ? 4 : 2) : 0;
    if (options.max_length < added_count)
      throw Error("max_length " + std::to_string(options.max_length) + " is smaller than the " +
                  std::to_string(added_count) + " special tokens it must hold");
    const size_t max_len = options.max_length - added_count;
    const size_t limit = std::max<size_t>(options.max_length, 1);
    if (options.truncation != TruncationStrategy::kOnlySecond)
      truncate_encoding(ea, word_precut_length(ea, limit, options.truncation_side, is_added_id), options.truncation_side);
    if (b) truncate_encoding(eb, word_precut_length(eb, limit, options.truncation_side, is_added_id), options.truncation_side);
    const size_t total = ea.size() + (b ? eb.size() : 0);
    if (max_len == 0) {  // as HF: nothing but the special tokens remains, whatever the strategy
      truncate_encoding(ea, 0, options.truncation_side);
      truncate_encoding(eb, 0, options.truncation_side);
    } else if (total > max_len) {
      if (options.truncation == TruncationStrategy::kLongestFirst) {
        if (b) {
          size_t n1 = ea.size(), n2 = eb.size();
          const bool swap = n1 > n2;
          if (swap) std::swap(n1, n2);
          n2 = n1 > max_len ? n1 : std::max(n1, max_len - n1);
          if (n1 + n2 > max_len) {
            n1 = max_len / 2;
            n2 = n1 + max_len % 2;
          }
          if (swap) std::swap(n1, n2);
          truncate_encoding(ea, n1, options.truncation_side);
          truncate_encoding(eb, n2, options.truncation_side);
        } else {
          truncate_encoding(ea, max_len, options.truncation_side);
        }
      } else {
        const bool first = options.truncation == TruncationStrategy::kOnlyFirst;
        if (!first && !b) throw Error("truncation only_second needs a pair of texts");
        Encoding& target = first ? ea : eb;
        const size_t to_remove = total - max_len;
        if (target.size() <= to_remove)
          throw Error(std::string("truncation ") + (first ? "only_first" : "only_second") +
                      ": the sequence is too short to remove " + std::to_string(to_remove) + " tokens");
        truncate_encoding(target, target.size() - to_remove, options.truncation_side);
      }
    }
  }
  if (!specials) {
    if (b) append_encoding(ea, eb);  // type ids stay 0: RoBERTa has one token type
    return ea;
  }
  Encoding out;
  push_special(out, cls_id, cls_token);
  append_encoding(out, ea);
  push_special(out, sep_id, sep_token);
  if (b) {
    push_special(out, sep_id, sep_token);
    append_encoding(out, eb);
    push_special(out, sep_id, sep_token);
  }
  return out;
}

Encoding Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  return impl_->encode(text, nullptr, options);
}

Encoding Tokenizer::encode_pair(std::string_view a, std::string_view b, const EncodeOptions& options) const {
  return impl_->encode(a, &b, options);
}

void Tokenizer::encode_ids(std::string_view text, std::vector<int32_t>& out, InvalidUtf8 invalid_utf8) const {
  std::string repaired;
  text = checked_text(text, invalid_utf8, repaired, "text");
  std::vector<Segment> segments;
  impl_->split_added(text, segments);
  for (const Segment& seg : segments) {
    if (seg.added >= 0)
      out.push_back(impl_->added[seg.added].id);
    else
      impl_->tokenize_text(text, seg.begin, seg.end,
                           [&](int32_t id, size_t, size_t, uint32_t, uint32_t, bool) { out.push_back(id); });
  }
}

std::vector<Encoding> Tokenizer::encode_batch(std::span<const std::string> texts, const EncodeOptions& options,
                                              unsigned num_threads) const {
  std::vector<Encoding> out(texts.size());
  if (num_threads == 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  num_threads = static_cast<unsigned>(std::min<size_t>(num_threads, texts.size()));
  std::atomic<size_t> next{0};
  size_t first_error = texts.size();
  std::string first_message;
  std::mutex error_mutex;
  const auto work = [&] {
    constexpr size_t kChunk = 16;
    for (;;) {
      const size_t start = next.fetch_add(kChunk);
      if (start >= texts.size()) return;
      for (size_t i = start; i < std::min(start + kChunk, texts.size()); ++i) {
        try {
          out[i] = encode(texts[i], options);
        } catch (const Error& e) {
          std::lock_guard lock(error_mutex);
          if (i < first_error) {
            first_error = i;
            first_message = e.what();
          }
        }
      }
    }
  };
  if (num_threads <= 1) {
    work();
  } else {
    std::vector<std::jthread> threads;
    for (unsigned t = 1; t < num_threads; ++t) threads.emplace_back(work);
    work();
  }
  if (first_error < texts.size()) throw Error("input " + std::to_string(first_error) + ": " + first_message);
  return out;
}

void Tokenizer::pad(std::span<Encoding> batch, const PaddingOptions& options) const {
  size_t length = options.length;
  if (length == 0)
    for (const Encoding& e : batch) length = std::max(length, e.size());
  if (options.multiple_of > 0 && length % options.multiple_of != 0)
    length += options.multiple_of - length % options.multiple_of;
  for (Encoding& e : batch) {
    if (e.size() >= length) continue;
    const size_t n = length - e.size();
    const auto grow = [&](auto& v, const auto& value) {
      if (options.side == Side::kRight)
        v.insert(v.end(), n, value);
      else
        v.insert(v.begin(), n, value);
    };
    grow(e.ids, impl_->pad_id), grow(e.type_ids, 0), grow(e.tokens, impl_->pad_token);
    grow(e.offsets, Offsets{0, 0}), grow(e.byte_offsets, Offsets{0, 0});
    grow(e.special_tokens_mask, uint8_t{1}), grow(e.attention_mask, uint8_t{0});
    grow(e.sequence_ids, int8_t{-1}), grow(e.word_ids, int32_t{-1});
  }
}

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

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  const auto it = impl_->ids_by_token.find(token);
  if (it == impl_->ids_by_token.end()) return std::nullopt;
  return it->second;
}

const std::string& Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->has_id.size() || !impl_->has_id[id])
    throw Error("token id " + std::to_string(id) + " is not in the vocabulary");
  return impl_->tokens_by_id[id];
}

size_t Tokenizer::vocab_size() const { return impl_->has_id.size(); }
const std::vector<AddedToken>& Tokenizer::added_tokens() const { return impl_->added; }
bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special_by_id.size() && impl_->special_by_id[id];
}
int32_t Tokenizer::bos_id() const { return impl_->cls_id; }
int32_t Tokenizer::eos_id() const { return impl_->sep_id; }
int32_t Tokenizer::pad_id() const { return impl_->pad_id; }
std::optional<int32_t> Tokenizer::mask_id() const { return impl_->mask_id; }
size_t Tokenizer::num_special_tokens_to_add(bool pair) const {
  return impl_->roberta_specials ? (pair ? 4 : 2) : 0;
}

}  // namespace roberta
