#pragma once
// The BPE model: turns one pre-token (raw bytes) into vocabulary ids by applying merges in rank
// order, with a bounded, thread-safe cache of recent words.
#include <array>
#include <functional>
#include <cstdint>
#include <memory>
#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace roberta {

struct BpePiece {
  int32_t id;
  uint32_t bytes;  // how many input bytes the token covers
};

class BpeModel {
 public:
  // vocab: byte-level token string -> id; merges: pairs in rank order. A merge of tokens not in
  // the vocabulary is an Error (kInvalidModel) naming merge_source.
  BpeModel(const std::unordered_map<std::string, int32_t>& vocab,
           const std::vector<std::pair<std::string, std::string>>& merges,
           std::optional<int32_t> unk_id, bool fuse_unk, const std::string& merge_source);
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

  // Appends the pieces of `word` (raw UTF-8 bytes of one pre-token).
  void encode_word(std::string_view word, std::vector<BpePiece>& out) const;

 private:
  void merge_word(std::string_view word, std::vector<BpePiece>& out) const;

  struct Merge {
    uint32_t rank;
    int32_t new_id;
  };
  std::array<int32_t, 256> byte_ids_{};  // id of each single byte's token, -1 if absent
  std::unordered_map<uint64_t, Merge> merges_;  // (left id << 32 | right id) -> merge
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;

  // Lock-free, insert-only cache of words: readers only load pointers to immutable entries, so
  // threads sharing a tokenizer never contend. Full at 3/4 of its slots; then words are merged
  // anew each time (memory stays bounded whatever the input).
  struct CacheEntry {
    std::string word;
    std::vector<BpePiece> pieces;
  };
  static constexpr size_t kCacheSlots = size_t{1} << 17;
  static constexpr size_t kMaxCachedWordBytes = 64;
  mutable std::unique_ptr<std::atomic<CacheEntry*>[]> cache_;
  mutable std::atomic<size_t> cache_size_{0};

 public:
  ~BpeModel();
};

}  // namespace roberta
