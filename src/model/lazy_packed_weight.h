#pragma once
// A weight packed for our fp32 GEMM the first time a product needs it, once, from any thread:
// for the MLM decoder (V, H), the model's largest matrix, which a model loaded to embed or
// classify texts never multiplies by. Once packed, the original's pages of the mapped checkpoint
// are dropped (release_original); readers of the original (the tied word embeddings' lookup)
// fault back in only the rows they read.
//
//   LazyPackedWeight decoder(word_embeddings, V, H, [&] { store.release_pages(info); });
//   kernels::packed_linear(logits, V, h, decoder.get(), bias, R);   // packs on the first call
#include <cstddef>
#include <functional>
#include <memory>

#include "kernels/packed_gemm.h"

namespace roberta {

class LazyPackedWeight {
 public:
  LazyPackedWeight() = default;
  // w (n, k) row-major, read until it is packed: it must outlive the first get().
  LazyPackedWeight(const float* w, size_t n, size_t k, std::function<void()> release_original = {});

  const kernels::PackedWeight& get() const;
  size_t bytes() const;  // of the packed copy: 0 until the first get()

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace roberta
