#pragma once
// sentence-transformers' CrossEncoder: scores (query, document) pairs with a
// RobertaForSequenceClassification checkpoint, for reranking. Load once, call from any thread.
//
//   roberta::CrossEncoder ce = roberta::CrossEncoder::load("models/my-reranker");
//   roberta::Matrix s = ce.predict({{"How many people live in Berlin?", "Berlin has 3.5 million people."}});
//   s.row(0)[0]                                        // 0.97: sigmoid of the logit (one label)
//   auto ranked = ce.rank("How many people live in Berlin?", {"Berlin is big.", "Paris."});
//   ranked[0].corpus_id, ranked[0].score               // best document first
//
// Steps for batching across requests: prepare, run (raw logits), finish (activation, softmax);
// for rank, prepare_rank and finish_rank. Several callers' pairs share one forward pass through a
// packed Batch:
//   auto a = ce.prepare_rank(query, documents), b = ce.prepare(pairs_b);
//   roberta::Batch batch;
//   for (const auto* p : {&a, &b})
//     for (const auto& e : p->encodings) batch.add_sequence(e.ids);
//   roberta::Matrix logits = ce.run(batch);           // a's rows, then b's
//   // each caller copies its rows into a Matrix of its own, then:
//   auto ranked = ce.finish_rank(a, a_logits, documents);  roberta::Matrix s = ce.finish(b, b_logits);
#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "roberta/config.h"
#include "roberta/error.h"
#include "roberta/model.h"
#include "roberta/tokenizer.h"

namespace roberta {

using TextPair = std::pair<std::string, std::string>;

// The activations a CrossEncoder's config may name (torch classes).
enum class CrossEncoderActivation { kIdentity, kSigmoid, kTanh, kReLU, kSoftmax };
// "torch.nn.modules.activation.Sigmoid", "torch.nn.Sigmoid", "Sigmoid", ... -> the activation;
// Error (kInvalidInput) for any other name.
CrossEncoderActivation parse_cross_encoder_activation(const std::string& name);
const char* cross_encoder_activation_name(CrossEncoderActivation a);  // "Sigmoid", ...

// What a CrossEncoder folder's config.json says beyond ModelConfig.
struct CrossEncoderConfig {
  // config.json "sentence_transformers": {"activation_fn": ...} (sentence-transformers >= 4), else
  // the older "sbert_ce_default_activation_function". A path outside torch is ignored, as
  // sentence-transformers does without trust_remote_code (see `note`); a torch class other than
  // the supported ones is an error (kInvalidModel).
  std::optional<CrossEncoderActivation> activation{};
  std::string note{};  // why a configured activation was ignored, or ""

  static CrossEncoderConfig from_dir(const std::filesystem::path& dir);
  // From config.json's text; `source` names it in errors.
  static CrossEncoderConfig from_json_text(const std::string& text, const std::string& source);
};

struct CrossEncoderOptions {
  // Replaces the default for this call (sentence-transformers' predict(activation_fn=...), which
  // there also becomes the model's new default; here it does not).
  std::optional<CrossEncoderActivation> activation{};
  // After the activation, a softmax over each pair's labels. As sentence-transformers, also with one
  // label (every score is then 1).
  bool apply_softmax = false;
  size_t max_length = 0;   // 0: the model's maximum; longer pairs are truncated (longest_first)
  // Which end of each text truncation cuts: kRight keeps the start (HF's default), kLeft the end.
  Side truncation_side = Side::kRight;
  size_t batch_size = 32;  // pairs per forward pass in predict/rank
};

struct RankedDocument {
  size_t corpus_id = 0;
  float score = 0;
  std::optional<std::string> text{};  // with return_documents
};

// How rank scores a document whose pair with the query is longer than max_length: kTruncate cuts
// the pair (sentence-transformers' and the default); kMax and kMean read the document in windows,
// each paired with the whole query, consecutive windows sharing `stride` tokens (HF's
// return_overflowing_tokens with truncation="only_second"), and take the maximum or the mean of
// the windows' scores (after the activation). A document that fits is one window either way.
enum class LongDocuments { kTruncate, kMax, kMean };
// "truncate", "max", "mean"; an Error naming them for anything else.
LongDocuments parse_long_documents(const std::string& name);

struct RankOptions {
  std::optional<size_t> top_k{};  // nullopt: every document
  bool return_documents = false;
  CrossEncoderOptions scoring{};
  LongDocuments long_documents = LongDocuments::kTruncate;
  size_t stride = 128;  // with kMax / kMean: tokens consecutive windows share (less than a window)
};

class CrossEncoder {
 public:
  struct Prepared {
    std::vector<Encoding> encodings{};
    // prepare_rank with long documents read in windows: the document of each encoding (empty: one
    // encoding per pair).
    std::vector<size_t> document_of{};
  };

  // Throws Error (kInvalidModel) without a sequence-classification head.
  CrossEncoder(Model model, Tokenizer tokenizer, CrossEncoderConfig config = {});
  // Without weights (prepare and finish only; run throws).
  CrossEncoder(Tokenizer tokenizer, ModelConfig model_config, CrossEncoderConfig config = {});
  // Model, tokenizer and CrossEncoderConfig::from_dir(dir).
  static CrossEncoder load(const std::filesystem::path& dir, const LoadOptions& options = {});

  // One pair. Errors (kInvalidInput): invalid UTF-8 in the first or second text.
  Prepared prepare(const TextPair& pair, const CrossEncoderOptions& options = {}) const;
  // Several pairs; an error is about_input(i) of the first bad one.
  Prepared prepare(std::span<const TextPair> pairs, const CrossEncoderOptions& options = {}) const;
  Matrix run(const Prepared& prepared) const;  // raw logits (pairs, num_labels)
  // The run step on a Batch the caller packed from the encodings of any number of prepare calls:
  // raw logits (sequences, num_labels) in batch order; a row does not depend on the rest of the batch.
  Matrix run(const Batch& batch) const;
  // Scores (pairs, num_labels): the activation, then the optional softmax.
  Matrix finish(const Prepared& prepared, const Matrix& logits, const CrossEncoderOptions& options = {}) const;

  Matrix predict(std::span<const TextPair> pairs, const CrossEncoderOptions& options = {}) const;
  Matrix predict(const std::vector<TextPair>& pairs, const CrossEncoderOptions& options = {}) const {
    return predict(std::span<const TextPair>(pairs), options);
  }
  // Each pair's scores (num_labels), or the Error its own prepare threw, about_input(i); the good
  // pairs share forward passes (options.batch_size does not split them).
  std::vector<Result<std::vector<float>>> run_batched(std::span<const TextPair> pairs,
                                                      const CrossEncoderOptions& options = {}) const;
  // Needs a one-label model (Error kInvalidModel otherwise). Sorted by score, best first; equal
  // scores keep document order.
  std::vector<RankedDocument> rank(const std::string& query, std::span<const std::string> documents,
                                   const RankOptions& options = {}) const;
  std::vector<RankedDocument> rank(const std::string& query, const std::vector<std::string>& documents,
                                   const RankOptions& options = {}) const {
    return rank(query, std::span<const std::string>(documents), options);
  }
  // rank in steps. prepare_rank: the pairs (query, documents[i]), prepared with options.scoring
  // (with options.long_documents, a long document's windows); Error (kInvalidModel) unless the
  // model has one label, as rank. finish_rank: their scores (finish with options.scoring, a
  // document's windows' scores joined), sorted as rank_scores does.
  Prepared prepare_rank(const std::string& query, std::span<const std::string> documents,
                        const RankOptions& options = {}) const;
  std::vector<RankedDocument> finish_rank(const Prepared& prepared, const Matrix& logits,
                                          std::span<const std::string> documents, const RankOptions& options = {}) const;
  // The sorting step of rank on scores already computed (one per document).
  static std::vector<RankedDocument> rank_scores(std::span<const float> scores, std::span<const std::string> documents,
                                                 const RankOptions& options = {});

  // The configured activation, else sigmoid for one label and identity for several.
  CrossEncoderActivation default_activation() const;
  const ModelConfig& model_config() const { return model_config_; }
  // sentence-transformers' max_length: the positions' limit, or the tokenizer's model_max_length
  // (tokenizer_config.json) when smaller; where pairs are truncated unless options say otherwise.
  size_t max_length() const;
  const CrossEncoderConfig& config() const { return config_; }

 private:
  void require_one_label() const;  // Error (kInvalidModel) unless num_labels is 1
  // The windows of the pair (query, document): one encoding when it fits, else windows of the
  // document's tokens (long_documents.cpp).
  std::vector<Encoding> windows(const std::string& query, const std::string& document, const RankOptions& options) const;
  std::optional<Model> model_;
  Tokenizer tokenizer_;
  ModelConfig model_config_;
  CrossEncoderConfig config_;
};

}  // namespace roberta
