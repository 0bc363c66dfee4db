// Loading a Tokenizer from a model folder: which of its files to read (tokenizer.json, vocab.json +
// merges.txt, vocab.txt), and what tokenizer_config.json, special_tokens_map.json and
// added_tokens.json change, as transformers reads them. A missing folder or missing tokenizer files
// are kIo, as a missing config.json is; bad contents kInvalidModel.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "tokenizer_impl.h"
#include "util/files.h"

namespace roberta {

using json = nlohmann::json;
using enum ErrorKind;

namespace {

// The optional booleans `keys` of config, each into its place. Returns the error about the first
// that is not a boolean (empty: none); the others are read all the same.
std::string read_flags(const json& config, const std::string& where,
                       std::initializer_list<std::pair<const char*, std::optional<bool>*>> keys, bool null_allowed) {
  std::string error;
  for (auto [key, value] : keys) {
    if (!config.contains(key) || config[key].is_null()) continue;
    if (config[key].is_boolean())
      *value = config[key].get<bool>();
    else if (error.empty())
      error = where + ": field \"" + key + "\" must be true" + (null_allowed ? ", false or null" : " or false");
  }
  return error;
}

}  // namespace

// tokenizer_config.json's or special_tokens_map.json's pad_token, mask_token, unk_token (and for a
// vocab.txt, cls_token and sep_token): a string, or an AddedToken object with its "content".
void Tokenizer::Impl::read_roles(Roles& roles, const json& config, const std::string& where) {
  for (auto [key, value] : {std::pair{"pad_token", &roles.pad_token}, std::pair{"mask_token", &roles.mask_token},
                            std::pair{"unk_token", &roles.unk_token}, std::pair{"cls_token", &roles.cls_token},
                            std::pair{"sep_token", &roles.sep_token}}) {
    if (!config.contains(key) || config[key].is_null()) continue;
    const json& v = config[key];
    if (v.is_string())
      *value = v.get<std::string>();
    else if (v.is_object() && v.contains("content") && v["content"].is_string())
      *value = v["content"].get<std::string>();
    else
      throw Error(where + ": field \"" + key + "\" must be a token (a string or an object with \"content\")",
                  kInvalidModel);
  }
}

Tokenizer::Impl::FolderConfig Tokenizer::Impl::read_folder_config(const std::filesystem::path& dir) {
  FolderConfig out;
  FolderSettings& settings = out.settings;
  std::error_code ec;
  bool config_has_added_tokens_decoder = false;
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
      if (n < 1e9) out.model_max_length = static_cast<size_t>(n);
    }
    const std::string error = read_flags(config, where,
                                         {std::pair{"add_prefix_space", &settings.add_prefix_space},
                                          std::pair{"trim_offsets", &settings.trim_offsets},
                                          std::pair{"clean_up_tokenization_spaces", &out.clean_up_tokenization_spaces}},
                                         false);
    if (!error.empty()) throw Error(error, kInvalidModel);
    read_roles(settings.roles, config, where);
    config_has_added_tokens_decoder = config.contains("added_tokens_decoder");
    if (config.contains("tokenizer_class") && config["tokenizer_class"].is_string()) {
      const std::string cls = config["tokenizer_class"].get<std::string>();
      settings.bert_tokenizer_class = cls == "BertTokenizer" || cls == "BertTokenizerFast";
    }
    // BertTokenizer's settings (used for a vocab.txt, and for a tokenizer.json of tokenizer_class
    // BertTokenizer): an error only where they are used.
    out.bert_setting_error = read_flags(config, where,
                                        {std::pair{"do_lower_case", &settings.do_lower_case},
                                         std::pair{"tokenize_chinese_chars", &settings.tokenize_chinese_chars},
                                         std::pair{"strip_accents", &settings.strip_accents}},
                                        true);
  }
  // special_tokens_map.json's tokens replace tokenizer_config.json's, as transformers reads them
  // when the config has no added_tokens_decoder (a config written by transformers 4.34 or later
  // holds the tokens itself, and the map is not read).
  const auto map_file = dir / "special_tokens_map.json";
  if (!config_has_added_tokens_decoder && std::filesystem::exists(map_file, ec)) {
    const json map = util::read_json_file(map_file);
    if (!map.is_object()) throw Error(map_file.string() + ": expected a JSON object", kInvalidModel);
    read_roles(settings.roles, map, map_file.string());
  }
  return out;
}

void Tokenizer::Impl::read_added_tokens_json(const std::filesystem::path& dir, FolderSettings& settings) {
  std::error_code ec;
  const auto added_file = dir / "added_tokens.json";
  if (!std::filesystem::exists(added_file, ec)) return;
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

Tokenizer Tokenizer::from_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw Error(dir.string() + (std::filesystem::exists(dir, ec) ? ": is a file, not a model folder" : ": model folder not found"),
                kIo);
  Impl::FolderConfig config = Impl::read_folder_config(dir);
  Impl::FolderSettings& settings = config.settings;
  const std::string& bert_setting_error = config.bert_setting_error;
  std::shared_ptr<Impl> impl;
  if (std::filesystem::exists(dir / "tokenizer.json", ec)) {
    if (settings.bert_tokenizer_class && !bert_setting_error.empty()) throw Error(bert_setting_error, kInvalidModel);
    impl =
        Impl::from_tokenizer_json(util::read_file(dir / "tokenizer.json"), (dir / "tokenizer.json").string(), settings);
  } else if (std::filesystem::exists(dir / "vocab.json", ec) && std::filesystem::exists(dir / "merges.txt", ec)) {
    Impl::read_added_tokens_json(dir, settings);
    impl = Impl::from_vocab_merges(util::read_file(dir / "vocab.json"), util::read_file(dir / "merges.txt"),
                                   (dir / "vocab.json").string(), (dir / "merges.txt").string(), settings);
  } else if (std::filesystem::exists(dir / "vocab.txt", ec)) {
    if (!bert_setting_error.empty()) throw Error(bert_setting_error, kInvalidModel);
    Impl::read_added_tokens_json(dir, settings);
    impl = Impl::from_vocab_txt(util::read_file(dir / "vocab.txt"), (dir / "vocab.txt").string(), settings);
  } else {
    // A SentencePiece model alone (XLMRobertaTokenizer's, CamembertTokenizer's slow files): what
    // transformers converts on loading; the converted tokenizer.json is what we read.
    for (const char* spm : {"sentencepiece.bpe.model", "spiece.model", "sentencepiece.model"})
      if (std::filesystem::exists(dir / spm, ec))
        throw Error(dir.string() + ": only a SentencePiece model (" + spm +
                        ") and no tokenizer.json: save the tokenizer once with transformers "
                        "(AutoTokenizer.from_pretrained(folder).save_pretrained(folder)) to write the tokenizer.json "
                        "it converts it to",
                    kInvalidModel);
    throw Error(dir.string() + ": no tokenizer found (expected tokenizer.json, vocab.json and merges.txt, or a "
                    "BERT-style vocab.txt)", kIo);
  }
  Tokenizer tok(std::move(impl));
  tok.model_max_length_ = config.model_max_length;
  tok.clean_up_tokenization_spaces_ = config.clean_up_tokenization_spaces;
  return tok;
}

}  // namespace roberta
