#pragma once
// The private state of a roberta::Tokenizer: the vocabulary, the BPE model, the added tokens and
// the settings read from tokenizer.json. Internal; shared by the files that implement Tokenizer:
//
//   load.cpp              tokenizer.json, vocab.json + merges.txt, from_dir
//   added_vocabulary.cpp  the added tokens: registering them in the vocabulary, matching them in text
//   encode.cpp            pre-tokenization + BPE with offsets; encode, encode_pair, encode_ids
//   encode_batch.cpp      encode_batch on several threads
//   truncation.cpp        truncation to max_length, and pad
//   decode.cpp            decode and the id <-> token lookups
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "added_vocabulary.h"
#include "bpe.h"
#include "roberta/tokenizer.h"

namespace roberta {

// Hashes std::string keys so that a std::string_view can look them up without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Tokenizer::Impl {
  std::unique_ptr<BpeModel> bpe;
  std::vector<std::string> tokens_by_id;  // "" where no token has the id
  std::vector<uint8_t> has_id;            // 1 where a token has the id
  std::vector<uint8_t> special_by_id;     // 1 for the ids of special added tokens
  std::vector<uint8_t> is_added_id;       // 1 for the ids of added tokens
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids_by_token;
  AddedVocabulary added;

  bool add_prefix_space = false;
  bool use_regex = true;
  bool roberta_specials = true;  // RobertaProcessing adds <s> ... </s>
  bool trim_offsets = true;
  bool trim_add_prefix_space = false;
  int32_t cls_id = 0, sep_id = 2, pad_id = 1;
  std::string cls_token = "<s>", sep_token = "</s>", pad_token = "<pad>";
  std::optional<int32_t> mask_id;

  // ---- loading (load.cpp)
  // Registers `token` with the id `id_value` (a JSON integer in [0, max_id]); errors name `where`.
  void add_vocab(const std::string& token, const nlohmann::json& id_value, const std::string& where, size_t max_id);
  // Registers every token -> id of the JSON object `vocab`; returns the map the BPE model needs.
  std::unordered_map<std::string, int32_t> load_vocab(const nlohmann::json& vocab, const std::string& where);

  // ---- added tokens (added_vocabulary.cpp)
  // Checks the added tokens against the vocabulary, gives the new ones their ids, indexes them
  // for matching and looks up <pad> and <mask>. The last step of loading; errors name `source`.
  void finish_added_tokens(const std::string& source);

  // ---- loading (load.cpp)
  // What a model folder's other files (tokenizer_config.json, added_tokens.json) change.
  struct FolderSettings {
    std::optional<bool> add_prefix_space{}, trim_offsets{};
    std::vector<AddedToken> added_tokens{};  // added_tokens.json (vocab.json + merges.txt only)
  };
  static std::shared_ptr<Impl> from_tokenizer_json(const std::string& text, const std::string& name,
                                                   const FolderSettings& settings);
  static std::shared_ptr<Impl> from_vocab_merges(const std::string& vocab_text, const std::string& merges_text,
                                                 const std::string& vocab_name, const std::string& merges_name,
                                                 const FolderSettings& settings);

  // ---- encoding (encode.cpp)
  // Calls on_token(id, begin, end, leading_spaces, leading_bytes, trailing_spaces, trailing_bytes,
  // first_of_word) for the BPE tokens of the plain text text[begin, end).
  template <class OnToken>
  void tokenize_text(std::string_view text, size_t begin, size_t end, OnToken&& on_token) const;
  // What HF's trim_offsets may take off a token's offsets: its leading and trailing spaces.
  struct Trim {
    uint32_t lead_chars, lead_bytes, trail_chars, trail_bytes;
  };
  // Appends the tokens of valid UTF-8 `text` to `enc`, with untrimmed offsets, word ids and
  // `sequence_id`, and one Trim per token to `trims`.
  void tokenize(std::string_view text, int8_t sequence_id, Encoding& enc, std::vector<Trim>& trims) const;
  // trim_offsets on the tokens of one text in `e` (`trims` theirs), after truncation.
  void trim(Encoding& e, const std::vector<Trim>& trims) const;
  // One input of encode: a text, or (HF's is_pretokenized) words, each tokenized on its own.
  struct Input {
    std::string_view text{};
    std::span<const std::string> words{};
    bool pretokenized = false;  // the input is `words`, not `text`
  };
  // Checks each word (invalid UTF-8 per options, errors naming "word N of `which`") and appends
  // its tokens to `enc` as tokenize() does, with the word's index as word id and offsets into it.
  void tokenize_words(std::span<const std::string> words, int8_t sequence_id, const EncodeOptions& options,
                      const char* which, Encoding& enc, std::vector<Trim>& trims) const;
  // encode (b null) or encode_pair: tokenize, truncate, add the special tokens.
  Encoding encode(const Input& a, const Input* b, const EncodeOptions& options) const;
};

}  // namespace roberta
