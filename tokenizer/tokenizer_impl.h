#pragma once
// The private state of a roberta::Tokenizer: the vocabulary, the BPE model, the added tokens and
// the settings read from tokenizer.json. Internal; shared by the files that implement Tokenizer:
//
//   load.cpp              tokenizer.json, vocab.json + merges.txt, vocab.txt
//   load_folder.cpp       from_dir: which files a model folder has, and its config files
//   added_vocabulary.cpp  the added tokens: registering them in the vocabulary, matching them in text
//   load_unigram.cpp      a Unigram tokenizer.json's model, normalizer, pre-tokenizer and decoder steps
//   encode.cpp            pre-tokenization + BPE (or WordPiece, or Unigram) with offsets; encode, encode_pair,
//                         encode_ids
//   wordpiece.cpp         BERT's normalizer and pre-tokenizer, and WordPiece
//   unigram.cpp           SentencePiece's normalizers, Metaspace and Unigram (precompiled.cpp: the charsmap)
//   encode_batch.cpp      encode_batch on several threads
//   truncation.cpp        truncation to max_length, and pad
//   decode.cpp            decode and the id <-> token lookups
//   alignment.cpp         Encoding's alignment queries (word_to_tokens, token_to_chars, ...)
//   normalized_text.cpp   a normalizer's output with each byte's original span (HF's NormalizedString)
//   bert_normalizer.cpp   BertNormalizer's strip_accents and lowercase, keeping those spans
//   lowercase.cpp         Python's str.lower(), for sentence-transformers' do_lower_case
#include <array>
#include <cstdint>
#include <filesystem>
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
#include "string_hash.h"
#include "truncation.h"
#include "unigram.h"
#include "wordpiece.h"
#include "roberta/tokenizer.h"

namespace roberta {

// One piece of a post-processor's layout (HF's TemplateProcessing; RobertaProcessing and
// BertProcessing are fixed layouts of it): a text with its type id, or special tokens.
struct TemplatePiece {
  int8_t sequence = -1;  // 0: text A, 1: text B, -1: the special tokens `ids`
  uint32_t type_id = 0;
  std::vector<int32_t> ids{};
  std::vector<std::string> tokens{};
};

// One step of a decoder chain: HF's Metaspace (`pattern` a space, but dropped in the first token
// when `drop_first`), Replace (`pattern` by `content` in each token), ByteFallback (runs of <0xXX>
// tokens as their bytes, each one U+FFFD if they are not UTF-8), Fuse (all tokens one),
// Strip (up to `start` / `stop` `pattern` characters off each token's ends).
struct DecoderStep {
  enum Kind { kMetaspace, kReplace, kByteFallback, kFuse, kStrip } kind;
  std::string pattern{}, content{};
  bool drop_first = false;
  size_t start = 0, stop = 0;
};

// Metaspace's settings, as a pre-tokenizer or a decoder: the replacement of a space,
// prepend_scheme (or the older add_prefix_space), split.
struct MetaspaceSettings {
  std::string replacement;
  UnigramModel::Prepend prepend_scheme;
  bool split;
};
MetaspaceSettings parse_metaspace(const nlohmann::json& m, const std::string& where);
// A decoder of type Metaspace, Replace, ByteFallback, Fuse, Strip or a Sequence of them (errors
// name `where`).
void parse_decoder_steps(const nlohmann::json& d, const std::string& where, std::vector<DecoderStep>& steps);

struct Tokenizer::Impl {
  std::unique_ptr<BpeModel> bpe;
  std::unique_ptr<WordPieceModel> wordpiece;  // instead of `bpe` for a WordPiece tokenizer
  std::unique_ptr<UnigramModel> unigram;      // instead of `bpe` for a SentencePiece (Unigram) tokenizer
  bool wordpiece_decoder = false;             // HF's WordPiece decoder (else ByteLevel)
  bool no_decoder = false;                    // tokenizer.json has none: HF joins the tokens with spaces
  // A decoder of SentencePiece tokenizers (Metaspace, or a Sequence of the steps below), run on
  // the token strings in order, as HF's decode_chain; empty for the other decoders.
  std::vector<DecoderStep> decoder_steps;
  std::string decoder_prefix = "##";
  bool decoder_cleanup = true;
  std::vector<std::string> tokens_by_id;  // "" where no token has the id
  std::vector<uint8_t> has_id;            // 1 where a token has the id
  std::vector<uint8_t> special_by_id;     // 1 for the ids of special added tokens
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids_by_token;
  AddedVocabulary added;
  // What decode writes for a normalized added token whose normalized content differs from its
  // content (HF's normalized_cache: "Café" decodes as "cafe" under an uncased normalizer).
  std::unordered_map<int32_t, std::string> decoded_added;

  bool add_prefix_space = false;
  bool use_regex = true;
  bool trim_offsets = true;
  bool trim_add_prefix_space = false;
  // The post-processor's layouts of one text and of a pair; without one (or ByteLevel), the
  // texts alone, B with type id 1.
  std::vector<TemplatePiece> single_template{{.sequence = 0}};
  std::vector<TemplatePiece> pair_template{{.sequence = 0}, {.sequence = 1, .type_id = 1}};
  // Sets the layouts to RoBERTa's <s> A </s></s> B </s> (every type id 0) or BERT's
  // [CLS] A [SEP] B [SEP] (B and its [SEP] type id 1), with their cls / sep.
  void roberta_template(const std::string& cls, int32_t cls_id, const std::string& sep, int32_t sep_id);
  void bert_template(const std::string& cls, int32_t cls_id, const std::string& sep, int32_t sep_id);
  // The special tokens before and after the text in the layout of one text (<s> / </s>, [CLS] / [SEP]);
  // where the layout has none, the vocabulary's <s> / </s>, else [CLS] / [SEP] (finish_added_tokens).
  int32_t cls_id = 0, sep_id = 2, pad_id = 1;
  bool cls_from_layout = false, sep_from_layout = false;
  std::string pad_token = "<pad>";
  std::optional<int32_t> mask_id, unk_id;

  // ---- loading (load.cpp, load_folder.cpp)
  // Registers `token` with the id `id_value` (a JSON integer in [0, max_id]); errors name `where`.
  void add_vocab(const std::string& token, const nlohmann::json& id_value, const std::string& where, size_t max_id);
  // Registers every token -> id of the JSON object `vocab`; returns the map the BPE model needs.
  std::unordered_map<std::string, int32_t> load_vocab(const nlohmann::json& vocab, const std::string& where);

  // ---- added tokens (added_vocabulary.cpp)
  // Checks the added tokens against the vocabulary, gives the new ones their ids, indexes them
  // for matching and looks up the pad, mask and unknown tokens: `roles` where it names them, else
  // <pad> / [PAD], <mask> / [MASK], the model's unknown token. The last step of loading; errors
  // name `source`.
  struct Roles {
    std::optional<std::string> pad_token{}, mask_token{}, unk_token{};
    std::optional<std::string> cls_token{}, sep_token{};  // (a vocab.txt's layout)
  };
  void finish_added_tokens(const std::string& source, const Roles& roles);

  // ---- loading (load.cpp, load_folder.cpp)
  // What a model folder's other files (tokenizer_config.json, added_tokens.json) change.
  struct FolderSettings {
    std::optional<bool> add_prefix_space{}, trim_offsets{};
    std::vector<AddedToken> added_tokens{};  // added_tokens.json (beside vocab.json + merges.txt or vocab.txt)
    Roles roles{};  // tokenizer_config.json's pad_token / mask_token / unk_token, special_tokens_map.json's
    // BertTokenizer's settings: a vocab.txt's, and a tokenizer.json's when tokenizer_config.json's
    // tokenizer_class is BertTokenizer (transformers then rebuilds the normalizer with them)
    std::optional<bool> do_lower_case{}, tokenize_chinese_chars{}, strip_accents{};
    bool bert_tokenizer_class = false;
  };
  void load_bpe(const nlohmann::json& model, const std::string& name);
  void load_wordpiece(const nlohmann::json& model, const std::string& name);
  // The Unigram model, its normalizer and pre-tokenizer (and a Metaspace decoder) of tokenizer.json `doc`.
  void load_unigram(const nlohmann::json& doc, const std::string& name);
  void parse_template(const nlohmann::json& post_processor, const std::string& where);
  // The parts of tokenizer.json after the model (load.cpp).
  void load_normalizer(const nlohmann::json& doc, const std::string& name, const FolderSettings& settings);
  bool load_pre_tokenizer(const nlohmann::json& doc, const std::string& name, const std::string& model_type);
  bool load_post_processor(const nlohmann::json& doc, const std::string& name);
  void load_decoder(const nlohmann::json& doc, const std::string& name);
  void check_template_ids(const std::string& name) const;
  // A model folder's files besides the tokenizer's own (load_folder.cpp): tokenizer_config.json
  // and special_tokens_map.json, as transformers reads them.
  struct FolderConfig {
    FolderSettings settings{};
    std::optional<size_t> model_max_length{};
    std::optional<bool> clean_up_tokenization_spaces{};
    std::string bert_setting_error{};  // a bad BertTokenizer setting: an error where one is used
  };
  static FolderConfig read_folder_config(const std::filesystem::path& dir);
  // tokenizer_config.json's or special_tokens_map.json's tokens of each role into roles.
  static void read_roles(Roles& roles, const nlohmann::json& config, const std::string& where);
  // added_tokens.json's tokens (beside vocab.json + merges.txt or vocab.txt) into settings.
  static void read_added_tokens_json(const std::filesystem::path& dir, FolderSettings& settings);
  static std::shared_ptr<Impl> from_tokenizer_json(const std::string& text, const std::string& name,
                                                   const FolderSettings& settings);
  static std::shared_ptr<Impl> from_vocab_txt(const std::string& text, const std::string& name,
                                              const FolderSettings& settings);
  static std::shared_ptr<Impl> from_vocab_merges(const std::string& vocab_text, const std::string& merges_text,
                                                 const std::string& vocab_name, const std::string& merges_name,
                                                 const FolderSettings& settings);

  // ---- encoding (encode.cpp)
  // The model's normalizer (WordPiece's BertNormalizer or Unigram's Sequence), when it has one;
  // normalized added tokens are matched in its output.
  bool normalizes() const;
  void normalize(std::string_view text, size_t begin, size_t end, NormalizedText& out) const;
  // Calls on_token(id, begin, end, leading_spaces, leading_bytes, trailing_spaces, trailing_bytes,
  // first_of_word, token) for the model's tokens of the plain text text[begin, end); `token` is
  // empty but for a token whose string is not the vocabulary's (Unigram's fused unknown pieces).
  template <class OnToken>
  void tokenize_text(std::string_view text, size_t begin, size_t end, OnToken&& on_token) const;
  // The added tokens and the model's tokens of `text`, in order (encode.cpp).
  template <class OnAdded, class OnToken>
  void for_each_piece(std::string_view text, OnAdded&& on_added, OnToken&& on_token) const;
  // Appends the tokens of valid UTF-8 `text` to `enc`, with untrimmed offsets, word ids and
  // `sequence_id`, and one TokenNotes per token to `notes`.
  void tokenize(std::string_view text, int8_t sequence_id, Encoding& enc, std::vector<TokenNotes>& notes) const;
  // trim_offsets on the tokens of one text in `e` (`notes` theirs), after truncation.
  void trim(Encoding& e, const std::vector<TokenNotes>& notes) const;
  // One input of encode: a text, or (HF's is_pretokenized) words, each tokenized on its own.
  struct Input {
    std::string_view text{};
    std::span<const std::string> words{};
    bool pretokenized = false;  // the input is `words`, not `text`
  };
  // Checks each word (invalid UTF-8 per options, errors naming "word N of `which`") and appends
  // its tokens to `enc` as tokenize() does, with the word's index as word id and offsets into it.
  void tokenize_words(std::span<const std::string> words, int8_t sequence_id, const EncodeOptions& options,
                      const char* which, Encoding& enc, std::vector<TokenNotes>& notes) const;
  // encode (b null) or encode_pair: tokenize, truncate, add the special tokens.
  Encoding encode(const Input& a, const Input* b, const EncodeOptions& options) const;
};

}  // namespace roberta
