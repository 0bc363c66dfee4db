// Loading a Tokenizer: tokenizer.json (HF's format; only what RoBERTa's byte-level BPE uses is
// accepted), or vocab.json + merges.txt with RobertaTokenizer's defaults. Errors about the files'
// content are ErrorKind::kInvalidModel, files or folders that cannot be read kIo.
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer_impl.h"
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

// obj[key], which must exist.
const json& field(const json& obj, const char* key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key)) throw Error(where + ": missing field \"" + key + "\"", kInvalidModel);
  return obj.at(key);
}

// obj[key] as a T, or `fallback` when it is absent or null.
template <class T>
T get_or(const json& obj, const char* key, T fallback, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return fallback;
  try {
    return obj.at(key).get<T>();
  } catch (const json::exception&) {
    throw Error(where + ": field \"" + key + "\" has the wrong type", kInvalidModel);
  }
}

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
  impl->cls_id = require("<s>");
  impl->sep_id = require("</s>");
  impl->added.tokens.insert(impl->added.tokens.end(), settings.added_tokens.begin(), settings.added_tokens.end());
  // As RobertaTokenizerFast builds it: add_prefix_space for the pre-tokenizer and the
  // post-processor, trim_offsets (default true) for the post-processor.
  impl->add_prefix_space = impl->trim_add_prefix_space = settings.add_prefix_space.value_or(false);
  impl->trim_offsets = settings.trim_offsets.value_or(true);
  impl->finish_added_tokens(vocab_name);
  return impl;
}

// Reads the file (kIo when it cannot be read) and loads its contents.
Tokenizer Tokenizer::from_tokenizer_json(const std::filesystem::path& path) {
  return from_tokenizer_json_text(util::read_file(path), path.string());
}

// Accepts model BPE, no normalizer, a ByteLevel pre-tokenizer (alone or in a Sequence of one),
// post-processor RobertaProcessing, ByteLevel or none, decoder ByteLevel or none.
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
  if (model_type != "BPE")
    throw Error(name + ": model.type \"" + model_type + "\" is not supported (only BPE)", kInvalidModel);
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
  const auto model_vocab = impl->load_vocab(field(model, "vocab", name + ": model"), name + ": model.vocab");

  const Merges merges = parse_merges_json(field(model, "merges", name + ": model"), name);
  std::optional<int32_t> unk_id;
  if (const auto unk = get_or<std::string>(model, "unk_token", "", name + ": model"); !unk.empty()) {
    const auto it = model_vocab.find(unk);
    if (it == model_vocab.end())
      throw Error(name + ": model.unk_token \"" + unk + "\" is not in the vocabulary", kInvalidModel);
    unk_id = it->second;
  }
  impl->bpe = std::make_unique<BpeModel>(model_vocab, merges, unk_id, get_or<bool>(model, "fuse_unk", false, name),
                                         name + ": model.merges");

  if (doc.contains("added_tokens") && !doc["added_tokens"].is_null())
    impl->added.tokens = parse_added_tokens(doc["added_tokens"], name);

  // A normalizer that does nothing (an empty Sequence, as some exports write) is none.
  const bool no_normalizer = !doc.contains("normalizer") || doc["normalizer"].is_null() ||
                             (get_or<std::string>(doc["normalizer"], "type", "", name + ": normalizer") == "Sequence" &&
                              doc["normalizer"].contains("normalizers") &&
                              doc["normalizer"]["normalizers"].is_array() && doc["normalizer"]["normalizers"].empty());
  if (!no_normalizer)
    throw Error(name + ": normalizer \"" + get_or<std::string>(doc["normalizer"], "type", "?", name) +
                "\" is not supported (RoBERTa tokenizers have none)", kInvalidModel);

  const auto read_byte_level = [&](const json& pt, const std::string& where) {
    impl->add_prefix_space = get_or<bool>(pt, "add_prefix_space", false, where);
    impl->use_regex = get_or<bool>(pt, "use_regex", true, where);
  };
  bool plain_byte_level = false;  // (not in a Sequence: transformers rewrites only that one)
  if (doc.contains("pre_tokenizer") && !doc["pre_tokenizer"].is_null()) {
    const json& pt = doc["pre_tokenizer"];
    const std::string type = get_or<std::string>(pt, "type", "", name + ": pre_tokenizer");
    if (type == "ByteLevel") {
      plain_byte_level = true;
      read_byte_level(pt, name + ": pre_tokenizer");
    } else if (type == "Sequence" && pt.contains("pretokenizers") && pt["pretokenizers"].is_array() &&
               pt["pretokenizers"].size() == 1 &&
               get_or<std::string>(pt["pretokenizers"][0], "type", "", name) == "ByteLevel") {
      read_byte_level(pt["pretokenizers"][0], name + ": pre_tokenizer.pretokenizers[0]");
    } else {
      throw Error(name + ": pre_tokenizer \"" + type + "\" is not supported (only ByteLevel)", kInvalidModel);
    }
  } else {
    throw Error(name + ": pre_tokenizer is missing (a byte-level BPE needs ByteLevel)", kInvalidModel);
  }

  impl->roberta_specials = false;
  impl->trim_offsets = false;
  const bool has_post_processor = doc.contains("post_processor") && !doc["post_processor"].is_null();
  if (has_post_processor) {
    const json& pp = doc["post_processor"];
    const std::string where = name + ": post_processor";
    const std::string type = get_or<std::string>(pp, "type", "", where);
    if (type == "RobertaProcessing") {
      impl->roberta_specials = true;
      const auto special = [&](const char* key, std::string& token, int32_t& id) {
        const json& v = field(pp, key, where);
        if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_number_integer() ||
            v[1].get<int64_t>() < 0 || v[1].get<int64_t>() > INT32_MAX)
          throw Error(where + "." + key + ": expected [token, id]", kInvalidModel);
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
      throw Error(where + " \"" + type + "\" is not supported (RobertaProcessing or ByteLevel)", kInvalidModel);
    }
  }
  if (doc.contains("decoder") && !doc["decoder"].is_null()) {
    const std::string type = get_or<std::string>(doc["decoder"], "type", "", name + ": decoder");
    if (type != "ByteLevel")
      throw Error(name + ": decoder \"" + type + "\" is not supported (only ByteLevel)", kInvalidModel);
  }
  impl->finish_added_tokens(name);
  for (int32_t id : {impl->cls_id, impl->sep_id})
    if (id < 0 || static_cast<size_t>(id) >= impl->has_id.size() || !impl->has_id[id])
      throw Error(name + ": post_processor special token id " + std::to_string(id) + " is not in the vocabulary",
                  kInvalidModel);
  // tokenizer_config.json's add_prefix_space / trim_offsets, where it gives them, replace the
  // file's, as transformers' RobertaTokenizerFast replaces them in a ByteLevel pre-tokenizer and in
  // the post-processor. (transformers 4.x also resets them to false / true when the config does not
  // give them; only a folder whose two files disagree sees the difference.)
  if (settings.add_prefix_space && plain_byte_level) impl->add_prefix_space = *settings.add_prefix_space;
  if (settings.add_prefix_space && has_post_processor) impl->trim_add_prefix_space = *settings.add_prefix_space;
  if (settings.trim_offsets && has_post_processor) impl->trim_offsets = *settings.trim_offsets;
  return impl;
}

// A missing folder or missing tokenizer files are kIo, as a missing config.json is.
Tokenizer Tokenizer::from_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw Error(dir.string() + (std::filesystem::exists(dir, ec) ? ": is a file, not a model folder" : ": model folder not found"),
                kIo);
  // tokenizer_config.json: model_max_length, add_prefix_space, trim_offsets and
  // clean_up_tokenization_spaces as transformers reads them; added_tokens.json: the tokens added to
  // a vocab.json + merges.txt tokenizer.
  Impl::FolderSettings settings;
  std::optional<size_t> model_max_length;
  std::optional<bool> clean_up;
  const auto config_file = dir / "tokenizer_config.json";
  if (std::filesystem::exists(config_file, ec)) {
    const std::string where = config_file.string();
    const json config = util::read_json_file(config_file);
    if (!config.is_object()) throw Error(where + ": expected a JSON object", kInvalidModel);
    if (config.contains("model_max_length") && config["model_max_length"].is_number()) {
      const double n = config["model_max_length"].get<double>();
      if (n < 1 || n != std::floor(n))
        throw Error(where + ": model_max_length " + config["model_max_length"].dump() + " is not a positive integer",
                    kInvalidModel);
      if (n < 1e9) model_max_length = static_cast<size_t>(n);
    }
    for (auto [key, value] : {std::pair{"add_prefix_space", &settings.add_prefix_space},
                              std::pair{"trim_offsets", &settings.trim_offsets},
                              std::pair{"clean_up_tokenization_spaces", &clean_up}}) {
      if (!config.contains(key) || config[key].is_null()) continue;
      if (!config[key].is_boolean())
        throw Error(where + ": field \"" + key + "\" must be true or false", kInvalidModel);
      *value = config[key].get<bool>();
    }
  }
  std::shared_ptr<Impl> impl;
  if (std::filesystem::exists(dir / "tokenizer.json", ec)) {
    impl =
        Impl::from_tokenizer_json(util::read_file(dir / "tokenizer.json"), (dir / "tokenizer.json").string(), settings);
  } else if (std::filesystem::exists(dir / "vocab.json", ec) && std::filesystem::exists(dir / "merges.txt", ec)) {
    const auto added_file = dir / "added_tokens.json";
    if (std::filesystem::exists(added_file, ec)) {
      const json added = util::read_json_file(added_file);
      if (!added.is_object())
        throw Error(added_file.string() + ": expected an object of tokens and their ids", kInvalidModel);
      for (const auto& [content, id] : added.items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
          throw Error(added_file.string() + ": the id of \"" + content + "\" must be a non-negative integer",
                      kInvalidModel);
        AddedToken t;  // as transformers adds them: not special, normalized
        t.content = content;
        t.id = id.get<int32_t>();
        t.special = false;
        settings.added_tokens.push_back(t);
      }
    }
    impl = Impl::from_vocab_merges(util::read_file(dir / "vocab.json"), util::read_file(dir / "merges.txt"),
                                   (dir / "vocab.json").string(), (dir / "merges.txt").string(), settings);
  } else {
    throw Error(dir.string() + ": no tokenizer found (expected tokenizer.json, or vocab.json and merges.txt)", kIo);
  }
  Tokenizer tok(std::move(impl));
  tok.model_max_length_ = model_max_length;
  tok.clean_up_tokenization_spaces_ = clean_up;
  return tok;
}

}  // namespace roberta
