#pragma once
// Small pieces the task pipelines share (internal): loading a model folder, UTF-8 checks and code
// point positions, softmax/sigmoid as transformers' numpy code computes them, the
// sequence-classification forward pass, and run_batched (many inputs in shared forward passes,
// one Result each).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/embedder.h"
#include "roberta/error.h"
#include "roberta/model.h"
#include "roberta/tokenizer.h"

namespace roberta::pipeline {

// Whether score a comes before b in descending order, a NaN before every number (as torch.topk
// and numpy's argsort, reversed, order them): a strict weak ordering for the sorts, which `a > b`
// is not where a score is NaN (a model whose outputs are NaN).
inline bool higher_score(float a, float b) { return std::isnan(a) ? !std::isnan(b) : a > b; }

// A model folder's model and tokenizer. Where the pool has more than one thread, the model loads
// on a thread of its own (packing its weights on the pool) while the calling thread parses the
// tokenizer, which takes about half as long as the model (docs/performance.md#figures-behind-the-code).
// Not the other way round: the tokenizer's allocations, made on a short-lived thread, would stay in
// that thread's malloc arena (`embed`'s peak memory rose by 10 MB). A folder where both fail
// reports the tokenizer's error, as loading it first would.
struct ModelAndTokenizer {
  Model model;
  Tokenizer tokenizer;
};
ModelAndTokenizer load_model_and_tokenizer(const std::filesystem::path& dir, const LoadOptions& options);

// Throws Error (kInvalidInput) "<what>: invalid UTF-8 at byte N" for a text that is not UTF-8
// ("invalid UTF-8 at byte N" when `what` is empty).
void require_utf8(std::string_view text, const std::string& what);

// The byte position of every code point of a valid UTF-8 text, for Python-style indexing:
// text[start:end] in code points, as transformers' offsets count.
class CodePoints {
 public:
  explicit CodePoints(std::string_view text);
  size_t size() const { return cps_.size(); }
  char32_t at(size_t i) const { return cps_[i]; }
  // Byte offset of code point i (i == size(): the text's byte length); i is clamped like Python.
  size_t byte(int64_t i) const;
  // text[start:end] as Python slices it (clamped, empty when end <= start).
  std::string slice(int64_t start, int64_t end) const;

 private:
  std::string_view text_;
  std::vector<char32_t> cps_;
  std::vector<size_t> bytes_;
};

// Softmax of n values (max subtracted, sums in double), as float.
void softmax(const float* x, size_t n, float* out);
inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// The longest sequence the model's positions allow (config.max_sequence_length()).
size_t model_max_length(const ModelConfig& config);
// Where the pipelines truncate: the tokenizer's model_max_length when it is smaller than the
// position limit (transformers' tokenizer truncates there), else that limit.
size_t truncation_length(const ModelConfig& config, const Tokenizer& tokenizer);

// Every encoding through the model as one Batch; the classifier's logits (encodings, num_labels).
// Passes of at most kTokensPerPass tokens (the server's default pass; one encoding a pass at least),
// so that memory stays bounded however many encodings come: run(batch, index of its first
// encoding) for each, in order. A row of a pass does not depend on the rest of the pass.
constexpr size_t kTokensPerPass = 16384;
void in_passes(std::span<const Encoding> encodings, const std::function<void(const Batch&, size_t first)>& run);

// n texts prepared one by one by prepare(i) (an Error names its input, Error::about_input), their
// indices added to `truncated` (when given) where cut, then sorted longest first into batches of
// batch_size, so that a batch holds texts of similar length: run(batch, the input index of each of
// its texts) for each, as sentence-transformers' encode batches.
void in_length_order(size_t n, const std::function<PreparedText(size_t)>& prepare, size_t batch_size,
                     std::vector<size_t>* truncated,
                     const std::function<void(std::span<const PreparedText>, std::span<const size_t>)>& run);

// (In passes of at most kTokensPerPass tokens.)
Matrix sequence_logits(const Model& model, std::span<const Encoding> encodings);

// A pipeline's run_batched: input i prepared alone by prepare(i); the inputs that prepared run
// together by run (a Matrix holding rows(p) rows for each, input after input, in passes it bounds
// itself); each input's rows given to finish. An Error in prepare or finish is that input's result
// alone, about_input(i); an Error in run is the whole call's.
template <class Output, class Prepared>
std::vector<Result<Output>> run_batched(size_t n, const std::function<Prepared(size_t)>& prepare,
                                        const std::function<Matrix(std::span<const Prepared>)>& run,
                                        const std::function<size_t(const Prepared&)>& rows,
                                        const std::function<Output(const Prepared&, const Matrix&)>& finish) {
  std::vector<Result<Output>> results(n);
  std::vector<Prepared> good;
  std::vector<size_t> where;
  for (size_t i = 0; i < n; ++i) {
    try {
      good.push_back(prepare(i));
      where.push_back(i);
    } catch (const Error& e) {
      results[i].error = e.about_input(i);
    }
  }
  if (good.empty()) return results;
  const Matrix all = run(good);
  size_t row = 0;
  for (size_t k = 0; k < good.size(); ++k) {
    Matrix mine(rows(good[k]), all.cols);
    if (mine.rows) std::copy_n(all.row(row), mine.rows * all.cols, mine.data.begin());
    row += mine.rows;
    try {
      results[where[k]].value = finish(good[k], mine);
    } catch (const Error& e) {
      results[where[k]].error = e.about_input(where[k]);
    }
  }
  return results;
}

// The tokens of `encodings`, all together.
inline size_t tokens_of(std::span<const Encoding> encodings) {
  size_t n = 0;
  for (const Encoding& e : encodings) n += e.size();
  return n;
}

// The encodings of every prepared input, in order (`member` selects them: windows, encodings).
template <class Prepared>
std::vector<Encoding> all_encodings(std::span<const Prepared> prepared, std::vector<Encoding> Prepared::*member) {
  std::vector<Encoding> out;
  for (const Prepared& p : prepared) out.insert(out.end(), (p.*member).begin(), (p.*member).end());
  return out;
}

// run_batched of a pipeline whose Prepared holds `encodings`, one row of logits each, and whose
// run(Prepared) runs them: pipeline.prepare(inputs[i], options), then finish(prepared, rows).
template <class Output, class Pipeline, class Input, class Options, class Finish>
std::vector<Result<Output>> run_batched_sequences(const Pipeline& pipeline, std::span<const Input> inputs,
                                                  const Options& options, const Finish& finish) {
  using Prepared = typename Pipeline::Prepared;
  return run_batched<Output, Prepared>(
      inputs.size(), [&](size_t i) { return pipeline.prepare(inputs[i], options); },
      [&](std::span<const Prepared> prepared) {
        return pipeline.run(Prepared{all_encodings(prepared, &Prepared::encodings)});
      },
      [](const Prepared& p) { return p.encodings.size(); }, finish);
}

// The same on a Batch already packed: (batch.num_sequences(), num_labels).
Matrix batch_sequence_logits(const Model& model, const Batch& batch);

// Python's str.strip() (str.isspace characters at both ends).
std::string python_strip(std::string_view text);

// Checks that `model` has `head` and the same labels as `config` (kInvalidModel otherwise).
const Model& require_model(const std::optional<Model>& model, const char* pipeline);

}  // namespace roberta::pipeline
