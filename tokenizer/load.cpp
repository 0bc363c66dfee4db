// Loading a Tokenizer: tokenizer.json (HF's format: RoBERTa's byte-level BPE, a BERT-style
// WordPiece, cased or not, or a Unigram model through load_unigram.cpp), vocab.txt, or vocab.json +
// merges.txt with RobertaTokenizer's defaults. Errors about the files' content are
// ErrorKind::kInvalidModel, files or folders that cannot be read kIo.
#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "json_fields.h"
#include "tokenizer_impl.h"
#include "unicode.h"
#include "util/files.h"

namespace roberta {

using json = nlohmann::json;
using enum ErrorKind;

namespace {

using Merges = std::vector<std::pair<std::string, std::string>>;

// The merges of merges.txt: "left right" lines in rank order, after an optional "#version" line.
Merges parse_merges_txt(const std::string& text, const std::string& name) {
  Merges merges;
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
      throw Error(name + ": line " + std::to_string(line_no) + ": expected two tokens separated by one space",
                  kInvalidModel);
    merges.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
  }
  return merges;
}

using json_fields::field;
using json_fields::get_or;

// model.merges of tokenizer.json: strings "left right" (older files) or pairs ["left", "right"].
Merges parse_merges_json(const json& merges_json, const std::string& name) {
  if (!merges_json.is_array()) throw Error(name + ": model.merges must be an array", kInvalidModel);
  Merges merges;
  merges.reserve(merges_json.size());
  for (size_t i = 0; i < merges_json.size(); ++i) {
    const json& m = merges_json[i];
    const std::string where = name + ": model.merges[" + std::to_string(i) + "]";
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        throw Error(where + ": expected \"left right\"", kInvalidModel);
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      throw Error(where + ": expected a string \"left right\" or a pair of strings", kInvalidModel);
    }
  }
  return merges;
}

// added_tokens of tokenizer.json.
std::vector<AddedToken> parse_added_tokens(const json& list, const std::string& name) {
  std::vector<AddedToken> tokens;
  if (!list.is_array()) throw Error(name + ": added_tokens must be an array", kInvalidModel);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = name + ": added_tokens[" + std::to_string(i) + "]";
    const json& t = list[i];
    AddedToken a;
    if (!field(t, "content", where).is_string()) throw Error(where + ": content must be a string", kInvalidModel);
    a.content = t["content"].get<std::string>();
    if (!field(t, "id", where).is_number_integer() || t["id"].get<int64_t>() < 0 || t["id"].get<int64_t>() > INT32_MAX)
      throw Error(where + ": id must be a non-negative 32-bit integer", kInvalidModel);
    a.id = t["id"].get<int32_t>();
    a.single_word = get_or<bool>(t, "single_word", false, where);
    a.lstrip = get_or<bool>(t, "lstrip", false, where);
    a.rstrip = get_or<bool>(t, "rstrip", false, where);
    a.normalized = get_or<bool>(t, "normalized", true, where);
    a.special = get_or<bool>(t, "special", false, where);
    tokens.push_back(a);
  }
  return tokens;
}

}  // namespace

// Ids may have holes: has_id and tokens_by_id grow to the largest id.
void Tokenizer::Impl::add_vocab(const std::string& token, const json& id_value, const std::string& where,
                                size_t max_id) {
  if (!id_value.is_number_integer())
    throw Error(where + ": id of token \"" + token + "\" is not an integer", kInvalidModel);
  const int64_t id = id_value.get<int64_t>();
  if (id < 0 || static_cast<size_t>(id) > max_id)
    throw Error(where + ": id " + std::to_string(id) + " of token \"" + token + "\" is out of range [0, " +
                std::to_string(max_id) + "]", kInvalidModel);
  if (has_id.size() <= static_cast<size_t>(id)) {
    has_id.resize(id + 1, 0);
    tokens_by_id.resize(id + 1);
  }
  if (has_id[id])
    throw Error(where + ": tokens \"" + tokens_by_id[id] + "\" and \"" + token + "\" have the same id " +
                std::to_string(id), kInvalidModel);
  has_id[id] = 1;
  tokens_by_id[id] = token;
  ids_by_token.emplace(token, static_cast<int32_t>(id));
}

// Also the token -> id map of the BPE model (ids of plain tokens, as BpeModel wants them).
std::unordered_map<std::string, int32_t> Tokenizer::Impl::load_vocab(const json& vocab, const std::string& where) {
  if (!vocab.is_object()) throw Error(where + ": expected a JSON object of token -> id", kInvalidModel);
  // Ids may have holes, but never more than the number of tokens allows (no allocation is sized
  // from an unchecked number).
  const size_t max_id = 2 * vocab.size() + 1024;
  std::unordered_map<std::string, int32_t> model_vocab;
  model_vocab.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    add_vocab(token, id, where, max_id);
    model_vocab.emplace(token, id.get<int32_t>());
  }
  return model_vocab;
}

// Reads both files (kIo when one cannot be read) and loads their contents.
Tokenizer Tokenizer::from_vocab_merges(const std::filesystem::path& vocab_json, const std::filesystem::path& merges_txt) {
  return from_vocab_merges_text(util::read_file(vocab_json), util::read_file(merges_txt), vocab_json.string(),
                                merges_txt.string());
}

// As transformers' RobertaTokenizer: no prefix space, <s> A </s> with trimmed offsets.
Tokenizer Tokenizer::from_vocab_merges_text(const std::string& vocab_text, const std::string& merges_text,
                                            const std::string& vocab_name, const std::string& merges_name) {
  return Tokenizer(Impl::from_vocab_merges(vocab_text, merges_text, vocab_name, merges_name, {}));
}

std::shared_ptr<Tokenizer::Impl> Tokenizer::Impl::from_vocab_merges(const std::string& vocab_text,
                                                                    const std::string& merges_text,
                                                                    const std::string& vocab_name,
                                                                    const std::string& merges_name,
                                                                    const FolderSettings& settings) {
  auto impl = std::make_shared<Impl>();
  const json vocab = util::parse_json(vocab_text, vocab_name);
  const auto model_vocab = impl->load_vocab(vocab, vocab_name);
  const auto merges = parse_merges_txt(merges_text, merges_name);
  const auto require = [&](const char* token) {
    const auto it = model_vocab.find(token);
    if (it == model_vocab.end())
      throw Error(vocab_name + ": special token \"" + std::string(token) + "\" is missing", kInvalidModel);
    return it->second;
  };
  impl->bpe = std::make_unique<BpeModel>(model_vocab, merges, std::nullopt, false, merges_name);
  // RobertaTokenizer's defaults: <mask> strips the whitespace on its left.
  for (const char* t : {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}) {
    AddedToken a;
    a.content = t;
    a.id = require(t);
    a.lstrip = a.content == "<mask>";
    impl->added.tokens.push_back(a);
  }
  impl->roberta_template("<s>", require("<s>"), "</s>", require("</s>"));
  impl->added.tokens.insert(impl->added.tokens.end(), settings.added_tokens.begin(), settings.added_tokens.end());
  // As RobertaTokenizerFast builds it: add_prefix_space for the pre-tokenizer and the
  // post-processor, trim_offsets (default true) for the post-processor.
  impl->add_prefix_space = impl->trim_add_prefix_space = settings.add_prefix_space.value_or(false);
  impl->trim_offsets = settings.trim_offsets.value_or(true);
  impl->finish_added_tokens(vocab_name, settings.roles);
  return impl;
}

// Reads the file (kIo when it cannot be read) and loads its contents.
Tokenizer Tokenizer::from_tokenizer_json(const std::filesystem::path& path) {
  return from_tokenizer_json_text(util::read_file(path), path.string());
}

// Accepts model BPE with no normalizer and a ByteLevel pre-tokenizer (alone or in a Sequence of
// one), or model WordPiece with a cased BertNormalizer (or none) and BertPreTokenizer;
// post-processor RobertaProcessing, BertProcessing, TemplateProcessing, ByteLevel or none; decoder
// ByteLevel, WordPiece or none.
Tokenizer Tokenizer::from_tokenizer_json_text(const std::string& text, const std::string& name) {
  return Tokenizer(Impl::from_tokenizer_json(text, name, {}));
}

std::shared_ptr<Tokenizer::Impl> Tokenizer::Impl::from_tokenizer_json(const std::string& text, const std::string& name,
                                                                      const FolderSettings& settings) {
  auto impl = std::make_shared<Impl>();
  const json doc = util::parse_json(text, name);
  if (!doc.is_object()) throw Error(name + ": expected a JSON object", kInvalidModel);

  const json& model = field(doc, "model", name);
  const std::string model_type = get_or<std::string>(model, "type", "BPE", name + ": model");
  if (model_type == "WordPiece")
    impl->load_wordpiece(model, name);
  else if (model_type == "BPE")
    impl->load_bpe(model, name);
  else if (model_type == "Unigram")
    impl->load_unigram(doc, name);
  else
    throw Error(name + ": model.type \"" + model_type + "\" is not supported (BPE, WordPiece or Unigram)",
                kInvalidModel);
  if (doc.contains("added_tokens") && !doc["added_tokens"].is_null())
    impl->added.tokens = parse_added_tokens(doc["added_tokens"], name);
  impl->load_normalizer(doc, name, settings);
  const bool plain_byte_level = impl->load_pre_tokenizer(doc, name, model_type);
  const bool has_post_processor = impl->load_post_processor(doc, name);
  impl->load_decoder(doc, name);
  impl->finish_added_tokens(name, settings.roles);
  impl->check_template_ids(name);
  // tokenizer_config.json's add_prefix_space / trim_offsets, where it gives them, replace the
  // file's, as transformers' RobertaTokenizerFast replaces them in a ByteLevel pre-tokenizer and in
  // the post-processor. (transformers 4.x also resets them to false / true when the config does not
  // give them; only a folder whose two files disagree sees the difference.)
  if (!impl->wordpiece && !impl->unigram) {
    if (settings.add_prefix_space && plain_byte_level) impl->add_prefix_space = *settings.add_prefix_space;
    if (settings.add_prefix_space && has_post_processor) impl->trim_add_prefix_space = *settings.add_prefix_space;
    if (settings.trim_offsets && has_post_processor) impl->trim_offsets = *settings.trim_offsets;
  }
  return impl;
}

// tokenizer.json's normalizer: none (or an empty Sequence), or WordPiece's BertNormalizer, whose
// settings tokenizer_config.json replaces for a BertTokenizer (Unigram's: load_unigram).
void Tokenizer::Impl::load_normalizer(const json& doc, const std::string& name, const FolderSettings& settings) {
  const bool is_wordpiece = wordpiece != nullptr, is_unigram = unigram != nullptr;
  // A normalizer that does nothing (an empty Sequence, as some exports write) is none.
  const bool no_normalizer = !doc.contains("normalizer") || doc["normalizer"].is_null() ||
                             (get_or<std::string>(doc["normalizer"], "type", "", name + ": normalizer") == "Sequence" &&
                              doc["normalizer"].contains("normalizers") &&
                              doc["normalizer"]["normalizers"].is_array() && doc["normalizer"]["normalizers"].empty());
  if (!no_normalizer && !is_unigram) {
    const json& n = doc["normalizer"];
    const std::string type = get_or<std::string>(n, "type", "?", name + ": normalizer");
    if (!is_wordpiece || type != "BertNormalizer")
      throw Error(name + ": normalizer \"" + type + "\" is not supported (" +
                      (is_wordpiece ? "WordPiece: BertNormalizer or none" : "RoBERTa tokenizers have none") + ")",
                  kInvalidModel);
    const std::string where = name + ": normalizer";
    bool lowercase = get_or<bool>(n, "lowercase", true, where);
    std::optional<bool> strip_accents;  // null: follows lowercase
    if (n.contains("strip_accents") && !n["strip_accents"].is_null())
      strip_accents = get_or<bool>(n, "strip_accents", false, where);
    bool chinese = get_or<bool>(n, "handle_chinese_chars", true, where);
    if (settings.bert_tokenizer_class) {
      // transformers' BertTokenizerFast rebuilds the normalizer with tokenizer_config.json's
      // do_lower_case (true unless it says false), strip_accents and tokenize_chinese_chars.
      lowercase = settings.do_lower_case.value_or(true);
      strip_accents = settings.strip_accents;
      chinese = settings.tokenize_chinese_chars.value_or(true);
    }
    wordpiece->lowercase = lowercase;
    wordpiece->strip_accents = strip_accents.value_or(lowercase);  // null follows lowercase, as in HF
    wordpiece->clean_text = get_or<bool>(n, "clean_text", true, name + ": normalizer");
    wordpiece->handle_chinese_chars = chinese;
  }
}

// tokenizer.json's pre_tokenizer: ByteLevel for a BPE, BertPreTokenizer for a WordPiece, alone or
// in a Sequence of one (Unigram's: load_unigram). Returns whether it is a plain ByteLevel (not in
// a Sequence: transformers rewrites only that one from tokenizer_config.json).
bool Tokenizer::Impl::load_pre_tokenizer(const json& doc, const std::string& name, const std::string& model_type) {
  const bool is_wordpiece = wordpiece != nullptr;
  const auto read_byte_level = [&](const json& pt, const std::string& where) {
    add_prefix_space = get_or<bool>(pt, "add_prefix_space", false, where);
    use_regex = get_or<bool>(pt, "use_regex", true, where);
  };
  const std::string wanted_pre_tokenizer = is_wordpiece ? "BertPreTokenizer" : "ByteLevel";
  bool plain_byte_level = false;
  if (unigram != nullptr) return false;  // (load_unigram read it)
  if (doc.contains("pre_tokenizer") && !doc["pre_tokenizer"].is_null()) {
    const json& pt = doc["pre_tokenizer"];
    const std::string type = get_or<std::string>(pt, "type", "", name + ": pre_tokenizer");
    if (type == wanted_pre_tokenizer) {
      plain_byte_level = !is_wordpiece;
      if (!is_wordpiece) read_byte_level(pt, name + ": pre_tokenizer");
    } else if (type == "Sequence" && pt.contains("pretokenizers") && pt["pretokenizers"].is_array() &&
               pt["pretokenizers"].size() == 1 &&
               get_or<std::string>(pt["pretokenizers"][0], "type", "", name) == wanted_pre_tokenizer) {
      if (!is_wordpiece) read_byte_level(pt["pretokenizers"][0], name + ": pre_tokenizer.pretokenizers[0]");
    } else {
      throw Error(name + ": pre_tokenizer \"" + type + "\" is not supported (" + model_type + ": only " +
                      wanted_pre_tokenizer + ")", kInvalidModel);
    }
  } else {
    throw Error(name + ": pre_tokenizer is missing (" +
                    (is_wordpiece ? "a WordPiece tokenizer needs BertPreTokenizer" : "a byte-level BPE needs ByteLevel") +
                    ")", kInvalidModel);
  }
  return plain_byte_level;
}

// tokenizer.json's post_processor: RobertaProcessing, BertProcessing, TemplateProcessing, ByteLevel
// or none. Returns whether there is one.
bool Tokenizer::Impl::load_post_processor(const json& doc, const std::string& name) {
  trim_offsets = false;
  const bool has_post_processor = doc.contains("post_processor") && !doc["post_processor"].is_null();
  if (has_post_processor) {
    const json& pp = doc["post_processor"];
    const std::string where = name + ": post_processor";
    const std::string type = get_or<std::string>(pp, "type", "", where);
    const auto special = [&](const char* key) {
      const json& v = field(pp, key, where);
      if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_number_integer() ||
          v[1].get<int64_t>() < 0 || v[1].get<int64_t>() > INT32_MAX)
        throw Error(where + "." + key + ": expected [token, id]", kInvalidModel);
      return std::pair{v[0].get<std::string>(), v[1].get<int32_t>()};
    };
    if (type == "RobertaProcessing" || type == "BertProcessing") {
      const auto [cls, cls_token_id] = special("cls");
      const auto [sep, sep_token_id] = special("sep");
      if (type == "RobertaProcessing") {
        roberta_template(cls, cls_token_id, sep, sep_token_id);
        trim_offsets = get_or<bool>(pp, "trim_offsets", true, where);
        trim_add_prefix_space = get_or<bool>(pp, "add_prefix_space", true, where);
      } else {
        bert_template(cls, cls_token_id, sep, sep_token_id);
      }
    } else if (type == "TemplateProcessing") {
      parse_template(pp, where);
    } else if (type == "ByteLevel") {
      trim_offsets = get_or<bool>(pp, "trim_offsets", true, where);
      trim_add_prefix_space = get_or<bool>(pp, "add_prefix_space", true, where);
    } else {
      throw Error(where + " \"" + type +
                      "\" is not supported (RobertaProcessing, BertProcessing, TemplateProcessing or ByteLevel)",
                  kInvalidModel);
    }
    // HF trims a token's offsets by the white space of its string; a Unigram token's string is a
    // piece ("\u2581" is no white space) or, unknown, the text itself: not done here.
    if (unigram != nullptr && trim_offsets)
      throw Error(where + " \"" + type + "\" with trim_offsets is not supported for a Unigram model "
                      "(TemplateProcessing, as transformers writes for XLM-RoBERTa)", kInvalidModel);
  }
  return has_post_processor;
}

// tokenizer.json's decoder: ByteLevel, WordPiece, the steps decode.cpp knows, or none.
void Tokenizer::Impl::load_decoder(const json& doc, const std::string& name) {
  if (doc.contains("decoder") && !doc["decoder"].is_null()) {
    const json& d = doc["decoder"];
    const std::string where = name + ": decoder";
    const std::string type = get_or<std::string>(d, "type", "", where);
    if (type == "WordPiece") {
      wordpiece_decoder = true;
      decoder_prefix = get_or<std::string>(d, "prefix", "##", where);
      decoder_cleanup = get_or<bool>(d, "cleanup", true, where);
    } else if (type != "ByteLevel") {
      parse_decoder_steps(d, where, decoder_steps);
    }
  } else {
    no_decoder = true;
  }
}

// Every special token id of the templates is in the vocabulary.
void Tokenizer::Impl::check_template_ids(const std::string& name) const {
  for (const auto* layout : {&single_template, &pair_template})
    for (const TemplatePiece& piece : *layout)
      for (int32_t id : piece.ids)
        if (id < 0 || static_cast<size_t>(id) >= has_id.size() || !has_id[id])
          throw Error(name + ": post_processor special token id " + std::to_string(id) + " is not in the vocabulary",
                      kInvalidModel);
}

// model of type BPE: byte-level, as RoBERTa's.
void Tokenizer::Impl::load_bpe(const json& model, const std::string& name) {
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!get_or<std::string>(model, key, "", name + ": model").empty())
      throw Error(name + ": model." + key + " is not supported (byte-level BPE has none)", kInvalidModel);
  // Options of HF's BPE that change its output and that RoBERTa tokenizers leave off.
  if (get_or<bool>(model, "ignore_merges", false, name + ": model"))
    throw Error(name + ": model.ignore_merges true is not supported (RoBERTa's BPE applies every merge)",
                kInvalidModel);
  if (model.contains("dropout") && !model["dropout"].is_null() &&
      !(model["dropout"].is_number() && model["dropout"].get<double>() == 0.0))
    throw Error(name + ": model.dropout " + model["dropout"].dump() +
                    " is not supported (BPE dropout is for training; inference merges deterministically)",
                kInvalidModel);
  const auto model_vocab = load_vocab(field(model, "vocab", name + ": model"), name + ": model.vocab");

  const Merges merges = parse_merges_json(field(model, "merges", name + ": model"), name);
  std::optional<int32_t> bpe_unk;
  if (const auto unk = get_or<std::string>(model, "unk_token", "", name + ": model"); !unk.empty()) {
    const auto it = model_vocab.find(unk);
    if (it == model_vocab.end())
      throw Error(name + ": model.unk_token \"" + unk + "\" is not in the vocabulary", kInvalidModel);
    bpe_unk = it->second;
  }
  unk_id = bpe_unk;
  bpe = std::make_unique<BpeModel>(model_vocab, merges, bpe_unk, get_or<bool>(model, "fuse_unk", false, name),
                                   name + ": model.merges");
}

// model of type WordPiece (a BERT-style tokenizer; its normalizer and pre-tokenizer come after).
void Tokenizer::Impl::load_wordpiece(const json& model, const std::string& name) {
  const std::string where = name + ": model";
  auto wp = std::make_unique<WordPieceModel>();
  const auto model_vocab = load_vocab(field(model, "vocab", where), where + ".vocab");
  wp->vocab.insert(model_vocab.begin(), model_vocab.end());
  const std::string unk = get_or<std::string>(model, "unk_token", "[UNK]", where);
  const auto it = model_vocab.find(unk);
  if (it == model_vocab.end())
    throw Error(where + ".unk_token \"" + unk + "\" is not in the vocabulary", kInvalidModel);
  wp->unk_id = it->second;
  unk_id = it->second;
  wp->continuing_subword_prefix = get_or<std::string>(model, "continuing_subword_prefix", "##", where);
  const json max_chars = model.contains("max_input_chars_per_word") ? model["max_input_chars_per_word"] : json(100);
  if (!max_chars.is_number_integer() || max_chars.get<int64_t>() < 0)
    throw Error(where + ".max_input_chars_per_word must be a non-negative integer", kInvalidModel);
  wp->max_input_chars_per_word = max_chars.get<size_t>();
  wordpiece = std::move(wp);
}

void Tokenizer::Impl::roberta_template(const std::string& cls, int32_t cls_token_id, const std::string& sep,
                                       int32_t sep_token_id) {
  const TemplatePiece c{.ids = {cls_token_id}, .tokens = {cls}}, s{.ids = {sep_token_id}, .tokens = {sep}};
  single_template = {c, {.sequence = 0}, s};
  pair_template = {c, {.sequence = 0}, s, s, {.sequence = 1}, s};
  cls_id = cls_token_id, sep_id = sep_token_id;
  cls_from_layout = sep_from_layout = true;
}

void Tokenizer::Impl::bert_template(const std::string& cls, int32_t cls_token_id, const std::string& sep,
                                    int32_t sep_token_id) {
  const TemplatePiece c{.ids = {cls_token_id}, .tokens = {cls}}, s{.ids = {sep_token_id}, .tokens = {sep}};
  TemplatePiece s1 = s;
  s1.type_id = 1;
  single_template = {c, {.sequence = 0}, s};
  pair_template = {c, {.sequence = 0}, s, {.sequence = 1, .type_id = 1}, s1};
  cls_id = cls_token_id, sep_id = sep_token_id;
  cls_from_layout = sep_from_layout = true;
}

// HF's TemplateProcessing: "single" and "pair", lists of {"SpecialToken": {"id", "type_id"}} and
// {"Sequence": {"id": "A" or "B", "type_id"}}, and "special_tokens", each {"id", "ids", "tokens"}.
void Tokenizer::Impl::parse_template(const json& pp, const std::string& where) {
  const json& specials = field(pp, "special_tokens", where);
  if (!specials.is_object()) throw Error(where + ".special_tokens must be an object", kInvalidModel);
  const auto parse = [&](const char* key, bool pair) {
    const json& list = field(pp, key, where);
    const std::string at = where + "." + key;
    if (!list.is_array()) throw Error(at + " must be an array", kInvalidModel);
    std::vector<TemplatePiece> out;
    int seen[2] = {0, 0};
    for (size_t i = 0; i < list.size(); ++i) {
      const json& item = list[i];
      const std::string item_at = at + "[" + std::to_string(i) + "]";
      const bool is_sequence = item.is_object() && item.size() == 1 && item.contains("Sequence");
      if (!is_sequence && !(item.is_object() && item.size() == 1 && item.contains("SpecialToken")))
        throw Error(item_at + ": expected {\"Sequence\": ...} or {\"SpecialToken\": ...}", kInvalidModel);
      const json& body = item.begin().value();
      TemplatePiece piece;
      const json type_id = body.is_object() && body.contains("type_id") ? body["type_id"] : json(0);
      if (!type_id.is_number_integer() || type_id.get<int64_t>() < 0 || type_id.get<int64_t>() > UINT32_MAX)
        throw Error(item_at + ".type_id must be a non-negative integer", kInvalidModel);
      piece.type_id = type_id.get<uint32_t>();
      const std::string id = get_or<std::string>(body, "id", "", item_at);
      if (is_sequence) {
        if (id != "A" && id != "B") throw Error(item_at + ": the sequence id must be \"A\" or \"B\"", kInvalidModel);
        piece.sequence = id == "A" ? 0 : 1;
        ++seen[piece.sequence];
      } else {
        if (!specials.contains(id))
          throw Error(item_at + ": special token \"" + id + "\" is not in special_tokens", kInvalidModel);
        const json& st = specials[id];
        const std::string st_at = where + ".special_tokens[\"" + id + "\"]";
        const json& ids = field(st, "ids", st_at);
        const json& tokens = field(st, "tokens", st_at);
        if (!ids.is_array() || !tokens.is_array() || ids.size() != tokens.size())
          throw Error(st_at + ": ids and tokens must be arrays of one length", kInvalidModel);
        for (size_t k = 0; k < ids.size(); ++k) {
          if (!ids[k].is_number_integer() || ids[k].get<int64_t>() < 0 || ids[k].get<int64_t>() > INT32_MAX ||
              !tokens[k].is_string())
            throw Error(st_at + ": ids must be token ids and tokens strings", kInvalidModel);
          piece.ids.push_back(ids[k].get<int32_t>());
          piece.tokens.push_back(tokens[k].get<std::string>());
        }
      }
      out.push_back(std::move(piece));
    }
    if (seen[0] != 1 || seen[1] != (pair ? 1 : 0))
      throw Error(at + (pair ? ": expected the sequences A and B once each" : ": expected the sequence A once"),
                  kInvalidModel);
    return out;
  };
  single_template = parse("single", false);
  pair_template = parse("pair", true);
  // The special tokens before and after the text of the one-text layout ([CLS] and [SEP]).
  const auto a = std::find_if(single_template.begin(), single_template.end(),
                              [](const TemplatePiece& p) { return p.sequence == 0; });
  if (a != single_template.begin() && !std::prev(a)->ids.empty()) {
    cls_id = std::prev(a)->ids.back();
    cls_from_layout = true;
  }
  if (std::next(a) != single_template.end() && !std::next(a)->ids.empty()) {
    sep_id = std::next(a)->ids.front();
    sep_from_layout = true;
  }
}

// As transformers' BertTokenizerFast converts a BertTokenizer's vocab.txt (BertConverter):
// WordPiece with the unknown token, BertNormalizer (clean_text; handle_chinese_chars,
// strip_accents and lowercase from tokenizer_config.json's tokenize_chinese_chars, strip_accents
// and do_lower_case, which defaults to true), BertPreTokenizer,
// [CLS] A [SEP] B [SEP] and the WordPiece decoder; the special tokens from the config files.
std::shared_ptr<Tokenizer::Impl> Tokenizer::Impl::from_vocab_txt(const std::string& text, const std::string& name,
                                                                 const FolderSettings& settings) {
  if (const auto bad = unicode::find_invalid_utf8(text))
    throw Error(name + ": invalid UTF-8 at byte " + std::to_string(*bad), kInvalidModel);
  auto impl = std::make_shared<Impl>();
  // BertTokenizer's load_vocab: a token per line (Python's universal newlines: \n, \r\n or \r),
  // its id the line's index (a later line wins).
  json vocab = json::object();
  size_t index = 0;
  for (size_t pos = 0; pos < text.size(); ++index) {
    size_t eol = text.find_first_of("\r\n", pos);
    if (eol == std::string::npos) eol = text.size();
    vocab[text.substr(pos, eol - pos)] = index;
    pos = eol + (text.compare(eol, 2, "\r\n") == 0 ? 2 : 1);
  }
  const auto model_vocab = impl->load_vocab(vocab, name);
  const auto require = [&](const std::optional<std::string>& named, const char* fallback) {
    const std::string token = named.value_or(fallback);
    const auto it = model_vocab.find(token);
    if (it == model_vocab.end())
      throw Error(name + ": special token \"" + token + "\" is missing", kInvalidModel);
    return std::pair{token, it->second};
  };
  auto wp = std::make_unique<WordPieceModel>();
  wp->vocab.insert(model_vocab.begin(), model_vocab.end());
  wp->unk_id = require(settings.roles.unk_token, "[UNK]").second;
  wp->clean_text = true;
  wp->handle_chinese_chars = settings.tokenize_chinese_chars.value_or(true);
  wp->lowercase = settings.do_lower_case.value_or(true);
  wp->strip_accents = settings.strip_accents.value_or(wp->lowercase);
  impl->unk_id = wp->unk_id;
  impl->wordpiece = std::move(wp);
  impl->wordpiece_decoder = true;
  const auto [cls, cls_id] = require(settings.roles.cls_token, "[CLS]");
  const auto [sep, sep_id] = require(settings.roles.sep_token, "[SEP]");
  impl->bert_template(cls, cls_id, sep, sep_id);
  // the special tokens, as transformers adds them: special, not normalized
  const Roles& r = settings.roles;
  for (const auto& [role, fallback] : {std::pair{&r.unk_token, "[UNK]"}, {&r.sep_token, "[SEP]"},
                                       {&r.pad_token, "[PAD]"}, {&r.cls_token, "[CLS]"}, {&r.mask_token, "[MASK]"}}) {
    const auto it = model_vocab.find(role->value_or(fallback));
    if (it == model_vocab.end()) {
      // a token the config names must be somewhere: in the vocabulary or in added_tokens.json
      const std::optional<std::string>& named = *role;  // (a lambda may not capture a structured binding)
      const auto added = [&](const AddedToken& t) { return t.content == *named; };
      if (named && std::none_of(settings.added_tokens.begin(), settings.added_tokens.end(), added))
        throw Error(name + ": special token \"" + *named + "\" is missing", kInvalidModel);
      continue;
    }
    AddedToken a;
    a.content = it->first;
    a.id = it->second;
    a.normalized = false;
    impl->added.tokens.push_back(a);
  }
  impl->added.tokens.insert(impl->added.tokens.end(), settings.added_tokens.begin(), settings.added_tokens.end());
  impl->finish_added_tokens(name, settings.roles);
  return impl;
}

}  // namespace roberta
