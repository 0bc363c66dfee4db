#pragma once
// Sparse (SPLADE) embeddings from a model's MLM head, as sentence-transformers' SparseEncoder
// (MLMTransformer + SpladePooling) and TEI's `--pooling splade` compute them: one weight per
// vocabulary entry, log1p(relu(logit)) taken over the text's tokens (all of them, <s> and </s>
// included) by max or sum. Only the non-zero weights are returned.
//
//   roberta::SparseEncoder splade = roberta::SparseEncoder::load("models/my-splade-model");
//   std::vector<roberta::SparseVector> v = splade(std::vector<std::string>{"a text", "another"});
//   v[0].indices, v[0].values            // ascending vocabulary ids and their weights
//   splade.decode(v[0], 5)               // the 5 heaviest tokens: {{"Ġtext", 2.1}, ...}
//   roberta::sparse_dot(v[0], v[1])      // their similarity (the model's "dot")
//
// A folder without SpladePooling (a plain masked-language model) is pooled by max with relu, as
// TEI's `--pooling splade` does. The vocabulary-sized product runs in chunks of tokens, each
// chunk's logits reduced before the next is computed: all tokens x vocabulary logits are never
// held at once.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "roberta/embedder.h"

namespace roberta {

struct SparseVector {
  std::vector<int32_t> indices{};  // vocabulary ids, ascending
  std::vector<float> values{};     // their weights, all > 0
};

struct SparseOptions {
  // Keep only the k largest weights of each text (sentence-transformers' max_active_dims); 0: all.
  size_t max_active_dims = 0;
  // Batching, length, truncation, prompt and strip as for dense embeddings (pooling, normalize:
  // not used). sentence-transformers' SparseEncoder pools the prompt's tokens too.
  EmbedOptions text{};
};

class SparseEncoder {
 public:
  // Throws roberta::Error (kInvalidModel) for a model without an MLM head.
  SparseEncoder(Model model, Tokenizer tokenizer, SentenceTransformerConfig config = {});
  static SparseEncoder load(const std::filesystem::path& dir, const LoadOptions& options = {});

  // One vector per text, in input order; texts are sorted by length into batches internally.
  // `truncated`, when given, receives the indices of texts cut to the maximum length. A bad text's
  // Error names it (Error::input()).
  std::vector<SparseVector> operator()(std::span<const std::string> texts, const SparseOptions& options = {},
                                       std::vector<size_t>* truncated = nullptr) const;

  // The same in steps, for a caller that batches texts of several requests (a server):
  //   PreparedText p = enc.prepare("a text", options);
  //   std::vector<SparseVector> v = enc.run({p, q}, options);   // one forward pass
  PreparedText prepare(std::string_view text, const SparseOptions& options = {}) const;
  PreparedText prepare_ids(std::span<const int32_t> ids, const SparseOptions& options = {}) const;
  std::vector<SparseVector> run(std::span<const PreparedText> texts, const SparseOptions& options = {}) const;

  // (token, weight) of v's k heaviest entries, heaviest first (ties: lower id first); k 0: all.
  // sentence-transformers' SparseEncoder.decode.
  std::vector<std::pair<std::string, float>> decode(const SparseVector& v, size_t k = 0) const;

  size_t dimension() const;  // the vocabulary size
  const SpladePoolingConfig& pooling() const { return pooling_; }
  const Embedder& text_preparer() const { return texts_; }  // its tokenizer, model, prompts, lengths

 private:
  Embedder texts_;  // prepares texts exactly as for dense embeddings
  SpladePoolingConfig pooling_;
};

// v with only its k largest weights (ties: lower id first), ids still ascending; k 0: v as it is.
// What SparseOptions::max_active_dims does, for a caller that cuts after the run (a server).
SparseVector keep_largest(SparseVector v, size_t k);

// The dot product of two sparse vectors (SparseEncoder's similarity), summed in double.
double sparse_dot(const SparseVector& a, const SparseVector& b);

}  // namespace roberta
