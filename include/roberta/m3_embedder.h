#pragma once
// bge-m3's three outputs from one forward pass, as FlagEmbedding's BGEM3FlagModel.encode computes
// them: the dense vector (the <s> state, normalised), lexical weights (relu(sparse_linear) of
// every token, the largest per token id, <s> </s> <pad> <unk> left out) and ColBERT vectors
// (colbert_linear of every token after <s>, </s> included, each normalised). The two heads are the
// folder's colbert_linear.pt and sparse_linear.pt, converted once by tools/convert_checkpoint.py
// into colbert_linear.safetensors and sparse_linear.safetensors.
//
//   roberta::M3Embedder m3 = roberta::M3Embedder::load("models/bge-m3");
//   roberta::M3Output out = m3(std::vector<std::string>{"a text"}, {.sparse = true, .colbert = true});
//   out.dense.row(0);  out.lexical[0].indices;  out.colbert[0].rows   // tokens - 1
//   std::vector<roberta::M3Scores> s = m3.compute_score({{"a query", "a passage"}});
#include <array>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "roberta/embedder.h"
#include "roberta/sparse_encoder.h"

namespace roberta {

struct M3Options {
  bool dense = true, sparse = false, colbert = false;  // FlagEmbedding's return_dense, _sparse, _colbert_vecs
  size_t batch_size = 32;
  size_t max_length = 512;   // tokens incl. <s> </s>, longer texts cut (FlagEmbedding's default); at most the model's
  size_t truncate_dim = 0;   // dense and ColBERT vectors cut to their first N values before normalising; 0: all
  bool normalize = true;     // FlagEmbedding's normalize_embeddings (dense and ColBERT)
};

struct M3Output {
  Matrix dense{};                      // (texts, dimension) with options.dense
  std::vector<SparseVector> lexical{};  // one per text with options.sparse: ids ascending, weights > 0
  std::vector<Matrix> colbert{};        // one per text with options.colbert: (tokens - 1, colbert dimension)
};

// BGEM3FlagModel.compute_score's five scores of a (query, passage) pair. colbert: the mean over
// the query's vectors of their largest dot product with the passage's; the two weighted ones use
// weights (dense, sparse, colbert), divided by their sum.
struct M3Scores {
  double dense = 0, sparse = 0, colbert = 0, sparse_dense = 0, colbert_sparse_dense = 0;
};

class M3Embedder {
 public:
  // The folder's model and tokenizer and the two heads; errors name the missing or malformed file
  // (a .pt not yet converted: the command that converts it).
  static M3Embedder load(const std::filesystem::path& dir, const LoadOptions& options = {});
  // The heads of `dir` beside a model loaded already (`texts`, e.g. a server's Embedder of dir).
  static M3Embedder with_heads(Embedder texts, const std::filesystem::path& dir);

  // One output of each kind asked for per text, in input order (texts sorted by length into
  // batches internally). A bad text's Error names it (Error::input()).
  M3Output operator()(std::span<const std::string> texts, const M3Options& options = {},
                      std::vector<size_t>* truncated = nullptr) const;

  // The same in steps, for a caller that batches texts of several requests (a server).
  PreparedText prepare(std::string_view text, const M3Options& options = {}) const;
  M3Output run(std::span<const PreparedText> texts, const M3Options& options = {}) const;

  // All three outputs of the queries and of the passages (each cut at its own maximum length),
  // then the pair's scores: BGEM3FlagModel.compute_score.
  std::vector<M3Scores> compute_score(const std::vector<std::pair<std::string, std::string>>& pairs,
                                      std::array<double, 3> weights = {1, 1, 1}, size_t max_query_length = 512,
                                      size_t max_passage_length = 512, size_t batch_size = 32) const;

  size_t dimension() const;          // the dense vector's: the hidden size
  size_t colbert_dimension() const;  // colbert_linear's outputs
  const Model& model() const { return texts_.model(); }
  const Tokenizer& tokenizer() const { return texts_.tokenizer(); }

 private:
  struct Heads;
  M3Embedder(Embedder texts, std::shared_ptr<const Heads> heads);
  Embedder texts_;  // prepares texts as FlagEmbedding's tokenizer call does (no strip, no prompt)
  std::shared_ptr<const Heads> heads_;
};

// FlagEmbedding's compute_lexical_matching_score: the sum over the ids both hold of the weights'
// products (sparse_dot).
double lexical_matching_score(const SparseVector& a, const SparseVector& b);
// FlagEmbedding's colbert_score: for each row of q its largest dot product with a row of p, averaged
// over q's rows (0 when q or p has none).
double colbert_score(const Matrix& q, const Matrix& p);

}  // namespace roberta
