#include "bpe.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "byte_level.h"
#include "roberta/error.h"

namespace roberta {

BpeModel::BpeModel(const std::unordered_map<std::string, int32_t>& vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   std::optional<int32_t> unk_id, bool fuse_unk, const std::string& merge_source)
    : unk_id_(unk_id), fuse_unk_(fuse_unk), cache_(new std::atomic<CacheEntry*>[kCacheSlots]) {
  for (size_t i = 0; i < kCacheSlots; ++i) cache_[i].store(nullptr, std::memory_order_relaxed);
  const auto& bl = byte_level::tables();
  for (int b = 0; b < 256; ++b) {
    const auto it = vocab.find(bl.byte_to_utf8[b]);
    byte_ids_[b] = it == vocab.end() ? -1 : it->second;
  }
  merges_.reserve(merges.size() * 2);
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& a = merges[rank].first;
    const std::string& b = merges[rank].second;
    const auto where = [&] { return merge_source + ": merge " + std::to_string(rank + 1) + " (\"" + a + " " + b + "\")"; };
    const auto ia = vocab.find(a);
    if (ia == vocab.end())
      throw Error(where() + ": token \"" + a + "\" is not in the vocabulary", ErrorKind::kInvalidModel);
    const auto ib = vocab.find(b);
    if (ib == vocab.end())
      throw Error(where() + ": token \"" + b + "\" is not in the vocabulary", ErrorKind::kInvalidModel);
    const auto merged = vocab.find(a + b);
    if (merged == vocab.end())
      throw Error(where() + ": merged token \"" + a + b + "\" is not in the vocabulary", ErrorKind::kInvalidModel);
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(ia->second)) << 32) |
                         static_cast<uint32_t>(ib->second);
    // A repeated merge keeps its first (best) rank.
    merges_.try_emplace(key, Merge{static_cast<uint32_t>(rank), merged->second});
  }
}

BpeModel::~BpeModel() {
  for (size_t i = 0; i < kCacheSlots; ++i) delete cache_[i].load(std::memory_order_relaxed);
}

void BpeModel::encode_word(std::string_view word, std::vector<BpePiece>& out) const {
  if (word.size() > kMaxCachedWordBytes) {
    merge_word(word, out);
    return;
  }
  size_t slot = std::hash<std::string_view>{}(word) & (kCacheSlots - 1);
  for (;; slot = (slot + 1) & (kCacheSlots - 1)) {
    const CacheEntry* e = cache_[slot].load(std::memory_order_acquire);
    if (!e) break;  // not cached
    if (e->word == word) {
      out.insert(out.end(), e->pieces.begin(), e->pieces.end());
      return;
    }
  }
  const size_t first = out.size();
  merge_word(word, out);
  if (cache_size_.load(std::memory_order_relaxed) >= kCacheSlots / 4 * 3) return;
  auto* entry = new CacheEntry{std::string(word), {out.begin() + static_cast<ptrdiff_t>(first), out.end()}};
  for (;; slot = (slot + 1) & (kCacheSlots - 1)) {
    CacheEntry* expected = nullptr;
    if (cache_[slot].compare_exchange_strong(expected, entry, std::memory_order_acq_rel)) {
      cache_size_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (expected->word == word) break;  // another thread cached it first
  }
  delete entry;
}

void BpeModel::merge_word(std::string_view word, std::vector<BpePiece>& out) const {
  struct Symbol {
    int32_t id;
    uint32_t bytes;
    int32_t prev, next;  // -1 at the ends
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    const int32_t id = byte_ids_[static_cast<unsigned char>(word[i])];
    if (id < 0) {
      if (!unk_id_) continue;  // like HF's BPE without unk_token: the byte is dropped
      if (fuse_unk_ && !symbols.empty() && symbols.back().id == *unk_id_) {
        ++symbols.back().bytes;
        continue;
      }
    }
    const auto n = static_cast<int32_t>(symbols.size());
    symbols.push_back({id < 0 ? *unk_id_ : id, 1, n - 1, n + 1});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  struct Candidate {
    uint32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto push_pair = [&](int32_t pos) {
    if (pos < 0) return;
    const int32_t next = symbols[pos].next;
    if (next < 0) return;
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(symbols[pos].id)) << 32) |
                         static_cast<uint32_t>(symbols[next].id);
    const auto it = merges_.find(key);
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.new_id});
  };
  for (int32_t pos = 0; pos + 1 < static_cast<int32_t>(symbols.size()); ++pos) push_pair(pos);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.bytes == 0 || left.next < 0) continue;  // merged away, or now last
    const int32_t right_pos = left.next;
    Symbol& right = symbols[right_pos];
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(left.id)) << 32) |
                         static_cast<uint32_t>(right.id);
    const auto it = merges_.find(key);
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // stale
    left.id = top.new_id;
    left.bytes += right.bytes;
    left.next = right.next;
    right.bytes = 0;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    push_pair(left.prev);
    push_pair(top.pos);
  }
  for (int32_t pos = 0; pos >= 0; pos = symbols[pos].next) out.push_back({symbols[pos].id, symbols[pos].bytes});
}

}  // namespace roberta
