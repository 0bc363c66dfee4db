#include "roberta/sparse_encoder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "pipelines/pipeline_util.h"
#include "roberta/error.h"
#include "util/files.h"
#include "util/thread_pool.h"

namespace roberta {

SpladePoolingConfig SpladePoolingConfig::from_file(const std::filesystem::path& file) {
  const std::string where = file.string();
  const auto cfg = util::read_json_file(file);
  if (!cfg.is_object()) throw Error(where + ": expected a JSON object", ErrorKind::kInvalidModel);
  SpladePoolingConfig c;
  const auto text = [&](const char* key, const char* fallback) {
    if (!cfg.contains(key) || cfg[key].is_null()) return std::string(fallback);
    if (!cfg[key].is_string()) throw Error(where + ": field \"" + key + "\" must be a string", ErrorKind::kInvalidModel);
    return cfg[key].get<std::string>();
  };
  const std::string strategy = text("pooling_strategy", "max"), activation = text("activation_function", "relu");
  if (strategy != "max" && strategy != "sum")
    throw Error(where + ": pooling_strategy \"" + strategy + "\" is not max or sum", ErrorKind::kInvalidModel);
  if (activation != "relu" && activation != "log1p_relu")
    throw Error(where + ": activation_function \"" + activation + "\" is not relu or log1p_relu",
                ErrorKind::kInvalidModel);
  c.strategy = strategy == "sum" ? Strategy::kSum : Strategy::kMax;
  c.activation = activation == "log1p_relu" ? Activation::kLog1pRelu : Activation::kRelu;
  return c;
}

SparseEncoder::SparseEncoder(Model model, Tokenizer tokenizer, SentenceTransformerConfig config)
    : texts_(std::move(model), std::move(tokenizer), config), pooling_(config.splade.value_or(SpladePoolingConfig{})) {
  texts_.model().require_head(Head::kMaskedLm, "so it cannot compute sparse embeddings");
}

SparseEncoder SparseEncoder::load(const std::filesystem::path& dir, const LoadOptions& options) {
  SentenceTransformerConfig config = SentenceTransformerConfig::from_dir(dir);
  auto [model, tokenizer] = pipeline::load_model_and_tokenizer(dir, options);
  return SparseEncoder(std::move(model), std::move(tokenizer), std::move(config));
}

size_t SparseEncoder::dimension() const { return static_cast<size_t>(texts_.model().config().vocab_size); }

PreparedText SparseEncoder::prepare(std::string_view text, const SparseOptions& options) const {
  PreparedText p = texts_.prepare(text, options.text);
  p.pooling_start = 0;  // SpladePooling pools every token, the prompt's too
  return p;
}

PreparedText SparseEncoder::prepare_ids(std::span<const int32_t> ids, const SparseOptions& options) const {
  PreparedText p = texts_.prepare_ids(ids, options.text);
  p.pooling_start = 0;
  return p;
}

namespace {

// pooled (B, V): each sequence's max (or sum of f) over its tokens, from logits rows [first,
// first + chunk.rows) of the batch's tokens; columns split over the pool, so no two tasks write the
// same entry. f is applied here for sum; for max it is applied once at the end, f being
// non-decreasing: f(max x) = max f(x) exactly.
void reduce_chunk(Matrix& pooled, const Matrix& chunk, size_t first, const Batch& batch, bool sum,
                  float (*f)(float)) {
  const size_t V = chunk.cols, kColumns = 2048;
  ThreadPool::global()->parallel_for((V + kColumns - 1) / kColumns, [&](size_t task) {
    const size_t c0 = task * kColumns, c1 = std::min(V, c0 + kColumns);
    size_t b = static_cast<size_t>(std::upper_bound(batch.offsets.begin(), batch.offsets.end(), first) -
                                   batch.offsets.begin()) - 1;
    for (size_t r = 0; r < chunk.rows; ++r) {
      while (first + r >= batch.offsets[b + 1]) ++b;
      const float* x = chunk.row(r);
      float* p = pooled.row(b);
      if (sum)
        for (size_t c = c0; c < c1; ++c) p[c] += f(x[c]);
      else
        for (size_t c = c0; c < c1; ++c) p[c] = std::max(p[c], x[c]);
    }
  });
}

float log1p_relu(float x) { return std::log1p(std::max(x, 0.0f)); }
float log1p_log1p_relu(float x) { return std::log1p(std::log1p(std::max(x, 0.0f))); }

// The non-zero entries of a pooled row, by id.
SparseVector sparsify(const float* w, size_t V) {
  SparseVector out;
  for (size_t v = 0; v < V; ++v)
    if (w[v] != 0.0f) out.indices.push_back(static_cast<int32_t>(v)), out.values.push_back(w[v]);
  return out;
}

}  // namespace

SparseVector keep_largest(SparseVector v, size_t k) {
  if (!k || v.indices.size() <= k) return v;
  std::vector<size_t> order(v.indices.size());
  std::iota(order.begin(), order.end(), 0);
  std::nth_element(order.begin(), order.begin() + static_cast<ptrdiff_t>(k), order.end(), [&](size_t a, size_t b) {
    return pipeline::higher_score(v.values[a], v.values[b]) ||
           (!pipeline::higher_score(v.values[b], v.values[a]) && a < b);
  });
  order.resize(k);
  std::sort(order.begin(), order.end());
  SparseVector out;
  for (size_t i : order) out.indices.push_back(v.indices[i]), out.values.push_back(v.values[i]);
  return out;
}

std::vector<SparseVector> SparseEncoder::run(std::span<const PreparedText> texts, const SparseOptions& options) const {
  Batch batch;
  for (const PreparedText& t : texts) batch.add_sequence(t.ids);
  const size_t V = dimension();
  const bool sum = pooling_.strategy == SpladePoolingConfig::Strategy::kSum;
  float (*f)(float) =
      pooling_.activation == SpladePoolingConfig::Activation::kLog1pRelu ? log1p_log1p_relu : log1p_relu;
  Matrix pooled(texts.size(), V);
  if (!sum) std::fill(pooled.data.begin(), pooled.data.end(), -std::numeric_limits<float>::infinity());
  ForwardOptions fo;
  fo.logits = true;  // every token's row
  fo.logits_in_chunks = [&](size_t first, const Matrix& chunk) { reduce_chunk(pooled, chunk, first, batch, sum, f); };
  if (batch.num_tokens()) texts_.model().forward(batch, fo);
  if (!sum)
    for (float& w : pooled.data) w = f(w);
  std::vector<SparseVector> result;
  for (size_t b = 0; b < texts.size(); ++b) result.push_back(keep_largest(sparsify(pooled.row(b), V), options.max_active_dims));
  return result;
}

std::vector<SparseVector> SparseEncoder::operator()(std::span<const std::string> texts, const SparseOptions& options,
                                                    std::vector<size_t>* truncated) const {
  std::vector<SparseVector> result(texts.size());
  pipeline::in_length_order(
      texts.size(), [&](size_t i) { return prepare(texts[i], options); }, options.text.batch_size, truncated,
      [&](std::span<const PreparedText> batch, std::span<const size_t> where) {
        std::vector<SparseVector> rows = run(batch, options);
        for (size_t i = 0; i < where.size(); ++i) result[where[i]] = std::move(rows[i]);
      });
  return result;
}

std::vector<std::pair<std::string, float>> SparseEncoder::decode(const SparseVector& v, size_t k) const {
  std::vector<size_t> order(v.indices.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return pipeline::higher_score(v.values[a], v.values[b]); });
  if (k && order.size() > k) order.resize(k);
  std::vector<std::pair<std::string, float>> out;
  for (size_t i : order) out.emplace_back(texts_.tokenizer().id_to_token(v.indices[i]), v.values[i]);
  return out;
}

double sparse_dot(const SparseVector& a, const SparseVector& b) {
  double dot = 0;
  for (size_t i = 0, j = 0; i < a.indices.size() && j < b.indices.size();) {
    if (a.indices[i] < b.indices[j]) ++i;
    else if (b.indices[j] < a.indices[i]) ++j;
    else dot += static_cast<double>(a.values[i++]) * b.values[j++];
  }
  return dot;
}

}  // namespace roberta
