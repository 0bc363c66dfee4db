#pragma once
// HF's Unigram model (SentencePiece's: the most probable segmentation of each word by Viterbi over
// the pieces' log probabilities, unknown characters fused into one token or spelled in <0xXX>
// byte pieces) with the normalizers and pre-tokenizers SentencePiece tokenizers use: Precompiled,
// Replace, Strip, Prepend in a Sequence; Metaspace (spaces as "▁", one prepended), optionally after
// WhitespaceSplit. What XLM-RoBERTa and CamemBERT checkpoints ship.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "normalized_text.h"
#include "precompiled.h"
#include "string_hash.h"

namespace roberta {

struct UnigramToken {
  int32_t id;
  size_t begin, end;  // byte offsets into the text
  bool first_of_word;
  std::string text;   // the token string when it is not the vocabulary's (a fused unknown piece)
};

// One step of the normalizer (HF's Sequence of them, in order).
struct SpmNormalizerStep {
  enum Kind { kPrecompiled, kReplace, kStrip, kPrepend } kind;
  std::shared_ptr<const Precompiled> precompiled{};
  // Replace: `pattern` (a string, or a character repeated at least `min_repeat` times: HF's
  // Regex(" {2,}")), by `content`; Prepend: `content`.
  std::string pattern{}, content{};
  size_t min_repeat = 0;
  bool left = false, right = false;  // Strip
};

struct UnigramModel {
  std::vector<std::string> pieces;  // by id
  std::vector<double> scores;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> vocab;  // (a repeated piece: its last id)
  std::optional<int32_t> unk_id;
  bool byte_fallback = false;
  std::vector<SpmNormalizerStep> normalizer;
  // Metaspace
  std::string replacement = "\xE2\x96\x81";  // U+2581
  enum class Prepend { kAlways, kFirst, kNever } prepend_scheme = Prepend::kAlways;
  bool split = true;
  bool whitespace_split = false;  // WhitespaceSplit before Metaspace (a Sequence of both)

  // Builds the trie and the byte pieces' ids; after `pieces` / `scores` are set.
  void finish();

  bool normalizes() const { return !normalizer.empty(); }
  // The normalizer's output for the valid UTF-8 text[begin, end).
  void normalize(std::string_view text, size_t begin, size_t end, NormalizedText& out) const;
  // Pre-tokenizes n.text[from, to) (a whole split between added tokens) and appends its tokens
  // (Metaspace's prepend_scheme "first" prepends only to a split starting at the text's byte 0).
  // Throws Error if a character is unknown and the model has no unknown token.
  void tokenize_normalized(const NormalizedText& n, size_t from, size_t to, std::vector<UnigramToken>& out) const;

 private:
  // The trie of the pieces' bytes: node k's children are labels_ / targets_[nodes_[k].first,
  // nodes_[k + 1].first) (a last node closes the list); `leaf` is the piece ending there, -1 for none.
  struct TrieNode {
    uint32_t first = 0;
    int32_t leaf = -1;
  };
  std::vector<TrieNode> nodes_;
  std::vector<uint8_t> labels_;
  std::vector<uint32_t> targets_;
  std::array<uint32_t, 256> root_child_{};  // the root's children by label (0: none)
  std::array<int32_t, 256> byte_ids_{};
  double min_score_ = 0;
  void encode_word(std::string_view word, const std::vector<std::pair<size_t, size_t>>& source, size_t at,
                   std::vector<UnigramToken>& out) const;
};

}  // namespace roberta
