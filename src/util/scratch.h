#pragma once
// Per-thread scratch memory that is reused between calls while it is small and given back after
// a large call, so that one big batch does not pin its working memory to a thread for the
// thread's whole life. data() is 64-byte aligned: a row of a 64-byte multiple starts on a cache
// line (glibc returns large blocks 16 bytes past a page, and AMX tile loads of rows that straddle
// two lines each run far slower: docs/performance.md#figures-behind-the-code).
//
//   thread_local std::vector<float> buffer;
//   util::Scratch<float> tmp(buffer, rows * cols);   // tmp.data(): at least rows * cols floats
//   ...                                               // on scope exit: freed if over kKeepBytes
#include <cstddef>
#include <cstdint>
#include <vector>

namespace roberta::util {

// What one scratch buffer may keep between calls. The forward pass uses 4 (plus 1 for bf16
// inputs and 2 small per-worker rows), so a thread keeps at most ~5 x 32 MiB after any call: the
// working memory of a batch of up to ~2,700 roberta-base tokens stays for the next call. With 8
// MiB, batches of 1,024 tokens and more give their buffers back after every call and, depending
// on where glibc has put the weights, fault them in again, which slows the forward pass down
// (docs/performance.md#figures-behind-the-code).
inline constexpr size_t kScratchKeepBytes = size_t{32} << 20;

template <class T>
class Scratch {
 public:
  static_assert(64 % sizeof(T) == 0, "the alignment is made of whole elements");
  Scratch(std::vector<T>& buffer, size_t n) : buffer_(buffer) {
    buffer_.resize(n + kPad);
    const size_t misaligned = reinterpret_cast<uintptr_t>(buffer_.data()) % 64;
    offset_ = misaligned ? (64 - misaligned) / sizeof(T) : 0;
  }
  ~Scratch() {
    if (buffer_.capacity() * sizeof(T) > kScratchKeepBytes) std::vector<T>().swap(buffer_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* data() const { return buffer_.data() + offset_; }

 private:
  static constexpr size_t kPad = 64 / sizeof(T);
  std::vector<T>& buffer_;
  size_t offset_ = 0;
};

}  // namespace roberta::util
