#pragma once
// The tokenizer of a model folder (byte-level BPE, WordPiece or Unigram), with the results of
// Hugging Face's tokenizers (RobertaTokenizerFast, XLMRobertaTokenizerFast, BertTokenizerFast).
//
//   roberta::Tokenizer tok = roberta::Tokenizer::from_dir("models/roberta-base");
//   roberta::Encoding e = tok.encode("Hello world!");     // ids {0, 31414, 232, 328, 2}
//   std::string text = tok.decode(e.ids, /*skip_special_tokens=*/true);  // "Hello world!"
//
// A Tokenizer is immutable after loading (its BPE cache is internally synchronised): share one
// instance between threads freely. Copies are cheap and share the same data.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "roberta/error.h"

namespace roberta {

// A token of the added vocabulary (`added_tokens` of tokenizer.json).
struct AddedToken {
  std::string content{};
  int32_t id = 0;
  bool single_word = false;
  bool lstrip = false;  // the match swallows the whitespace before it
  bool rstrip = false;  // ... and after it
  bool normalized = true;
  bool special = true;
};

// [start, end) offsets of a token in the input text.
using Offsets = std::pair<int64_t, int64_t>;

struct Encoding {
  std::vector<int32_t> ids{};
  std::vector<int32_t> type_ids{};
  std::vector<std::string> tokens{};
  std::vector<Offsets> offsets{};       // in code points, trimmed like HF's trim_offsets
  std::vector<Offsets> byte_offsets{};  // the same spans in UTF-8 bytes
  std::vector<uint8_t> special_tokens_mask{};  // 1 for tokens added by post-processing / padding
  std::vector<uint8_t> attention_mask{};       // 0 for padding
  std::vector<int8_t> sequence_ids{};          // 0 or 1 for text of input A or B, -1 otherwise
  std::vector<int32_t> word_ids{};             // pre-tokenizer word of each token, -1 for specials
  int n_sequences = 1;                         // 2 for a pair (even with an empty text)

  size_t size() const { return ids.size(); }

  // HF tokenizers' alignment queries, nullopt where HF gives None (and for a negative word,
  // position or sequence, which HF's unsigned types cannot take). Offsets are code points, as
  // `offsets`. `sequence` is 0 (text A) or 1 (text B); HF searches every token for a sequence the
  // encoding lacks (sequence 1 of a single text), and so do these. One difference: without a
  // post-processor (tokenizer.json's null) HF keeps no sequence ranges for a single text and
  // answers token_to_sequence with 0 even for padding and index len(); these give nullopt there.
  //   e = tok.encode_pair("Where?", "In Berlin.");  e.char_to_token(3, 1) == 6 ("ĠBerlin")
  std::optional<int> token_to_sequence(size_t token) const;
  std::optional<int32_t> token_to_word(size_t token) const;
  std::optional<Offsets> token_to_chars(size_t token) const;
  std::optional<std::pair<size_t, size_t>> word_to_tokens(int32_t word, int sequence = 0) const;  // [first, end)
  std::optional<Offsets> word_to_chars(int32_t word, int sequence = 0) const;
  std::optional<size_t> char_to_token(int64_t pos, int sequence = 0) const;
  std::optional<int32_t> char_to_word(int64_t pos, int sequence = 0) const;

 private:
  std::pair<size_t, size_t> sequence_range(int sequence) const;
};

enum class InvalidUtf8 {
  kError,    // throw roberta::Error naming the byte offset of the first bad sequence
  kReplace,  // replace each maximal bad subsequence by U+FFFD (as Python's errors="replace");
             // offsets then refer to the repaired text
};

enum class TruncationStrategy { kLongestFirst, kOnlyFirst, kOnlySecond };
enum class Side { kRight, kLeft };

struct EncodeOptions {
  bool add_special_tokens = true;
  size_t max_length = 0;  // 0: no truncation; else the total length including special tokens
  TruncationStrategy truncation = TruncationStrategy::kLongestFirst;
  Side truncation_side = Side::kRight;
  InvalidUtf8 invalid_utf8 = InvalidUtf8::kError;
};

struct PaddingOptions {
  size_t length = 0;       // 0: pad to the longest encoding of the batch
  size_t multiple_of = 0;  // round the padded length up to a multiple of this
  Side side = Side::kRight;
};

class Tokenizer {
 public:
  // Loads `tokenizer.json` from `dir` when present, else `vocab.json` + `merges.txt` with
  // RoBERTa's special tokens (<s> <pad> </s> <unk>, and <mask> with lstrip). tokenizer.json is
  // RoBERTa's byte-level BPE or, as some `model_type: roberta` checkpoints ship, a cased BERT-style
  // WordPiece ([CLS] A [SEP] B [SEP]). The pad, mask and unknown tokens are those
  // special_tokens_map.json or tokenizer_config.json name, else <pad> / [PAD], <mask> / [MASK] and
  // the model's unknown token.
  static Tokenizer from_dir(const std::filesystem::path& dir);
  static Tokenizer from_tokenizer_json(const std::filesystem::path& path);
  static Tokenizer from_vocab_merges(const std::filesystem::path& vocab_json,
                                     const std::filesystem::path& merges_txt);
  // The same from file contents; the names are used in error messages.
  static Tokenizer from_tokenizer_json_text(const std::string& text, const std::string& name);
  static Tokenizer from_vocab_merges_text(const std::string& vocab_json, const std::string& merges_txt,
                                          const std::string& vocab_name, const std::string& merges_name);

  // tok.encode("The capital of France is <mask>.").ids  →  {0, 133, 812, 9, 1470, 16, 50264, 4, 2}
  Encoding encode(std::string_view text, const EncodeOptions& options = {}) const;
  // <s> A </s></s> B </s> (BERT's layout: [CLS] A [SEP] B [SEP], B's type id 1)
  Encoding encode_pair(std::string_view a, std::string_view b,
                       const EncodeOptions& options = {}) const;
  // Pre-tokenized input, as HF tokenizers' encode(..., is_pretokenized=True) and transformers'
  // is_split_into_words=True: each word is tokenized on its own (with add_prefix_space each gets
  // its leading space; an empty word gives no token); every token of word i has word id i and
  // offsets into word i (not into a joined text). Invalid UTF-8 errors name the word. Truncation
  // as encode's, after HF's cut of each word longer than max_length to whole pre-tokens (which
  // can decide how longest_first shares a pair).
  //   const std::vector<std::string> words{"New", "York"};
  //   tok.encode_words(words).tokens  // with add_prefix_space: <s> ĠNew ĠYork </s>, word ids -1 0 1 -1
  Encoding encode_words(std::span<const std::string> words, const EncodeOptions& options = {}) const;
  Encoding encode_words_pair(std::span<const std::string> a, std::span<const std::string> b,
                             const EncodeOptions& options = {}) const;
  // Encodes on `num_threads` threads (0: all cores); results are in input order. The failure of
  // the first failing text is rethrown: a roberta::Error naming it, counted from 1 as the
  // pipelines count inputs ("input 3: ..." for texts[2]), any other exception unchanged.
  std::vector<Encoding> encode_batch(std::span<const std::string> texts,
                                     const EncodeOptions& options = {},
                                     unsigned num_threads = 0) const;
  // Lists of words (one list, or a pair of lists: encode_words_pair), for encode_words_batch.
  struct WordsInput {
    std::vector<std::string> words{};
    std::optional<std::vector<std::string>> pair{};
  };
  // encode_words / encode_words_pair of each input on `num_threads` threads, as encode_batch.
  std::vector<Encoding> encode_words_batch(std::span<const WordsInput> inputs, const EncodeOptions& options = {},
                                           unsigned num_threads = 0) const;
  // Only the ids, without special tokens: the fast path for counting and streaming.
  void encode_ids(std::string_view text, std::vector<int32_t>& out,
                  InvalidUtf8 invalid_utf8 = InvalidUtf8::kError) const;

  // Pads every encoding of a batch to one length with <pad> (attention_mask 0).
  void pad(std::span<Encoding> batch, const PaddingOptions& options = {}) const;

  // tok.decode({0, 31414, 232, 328, 2}, true) == "Hello world!"; invalid UTF-8 becomes U+FFFD.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // transformers' convert_tokens_to_string (the tokenizer's decoder on token strings). ByteLevel:
  // each string whose characters are all byte-level characters becomes those bytes, any other is
  // taken as it is, then the bytes are made valid UTF-8; WordPiece: as decode joins tokens.
  std::string convert_tokens_to_string(std::span<const std::string> tokens) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // Throws roberta::Error for an id that is not in the vocabulary.
  const std::string& id_to_token(int32_t id) const;
  // One more than the largest id (the size an embedding matrix needs).
  size_t vocab_size() const;
  const std::vector<AddedToken>& added_tokens() const;
  bool is_special(int32_t id) const;
  int32_t bos_id() const;   // <s> ([CLS])
  int32_t eos_id() const;   // </s> ([SEP])
  int32_t pad_id() const;   // <pad> ([PAD])
  std::optional<int32_t> mask_id() const;  // <mask> ([MASK])
  std::optional<int32_t> unk_id() const;   // <unk> ([UNK])
  // What encode adds around one text or a pair: 2 / 4 for RoBERTa's layout, 2 / 3 for BERT's.
  size_t num_special_tokens_to_add(bool pair) const;
  // A WordPiece tokenizer (BERT's layout) rather than RoBERTa's byte-level BPE.
  bool is_wordpiece() const;
  // A SentencePiece tokenizer (Unigram model, Metaspace pre-tokenizer: XLM-RoBERTa's, CamemBERT's).
  bool is_unigram() const;
  // A WordPiece tokenizer whose BertNormalizer lowercases (an uncased vocabulary; transformers'
  // BertTokenizer.do_lower_case), and one that strips accents (NFD, non-spacing marks removed).
  bool lowercases() const;
  bool strips_accents() const;
  // transformers' tokenizer.model_max_length: tokenizer_config.json's "model_max_length" when
  // from_dir found one below 10^9 (unset ones are written as 1e30), else nullopt. The pipelines
  // truncate at the smaller of it and the model's position limit, as transformers and
  // sentence-transformers do.
  std::optional<size_t> model_max_length() const { return model_max_length_; }
  // tokenizer_config.json's "clean_up_tokenization_spaces" (transformers' decode cleans " ." to "."
  // and " n't" to "n't" when it is true), nullopt when from_dir found none.
  std::optional<bool> clean_up_tokenization_spaces() const { return clean_up_tokenization_spaces_; }
  // Gives token i of `e` the offsets it would have as the first token of its text: HF post-processes
  // each overflowing window on its own, and with add_prefix_space its trim_offsets keeps the one
  // leading space of a text's first token. For windows cut out of one encoding (QA, token
  // classification with a stride); `i` must not already be the first token of its text.
  void as_first_token(Encoding& e, size_t i) const;

 private:
  struct Impl;  // the loaded vocabulary and settings (tokenizer/tokenizer_impl.h in the source tree)
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
  std::optional<size_t> model_max_length_{};
  std::optional<bool> clean_up_tokenization_spaces_{};
};

}  // namespace roberta
