#include "roberta/m3_embedder.h"

#include <algorithm>
#include <map>

#include "kernels/packed_gemm.h"
#include "pipelines/pipeline_util.h"
#include "roberta/dev/weights.h"
#include "roberta/error.h"

namespace roberta {

// colbert_linear (C, H) packed for our GEMM, sparse_linear (1, H) as a vector.
struct M3Embedder::Heads {
  kernels::PackedWeight colbert;
  std::vector<float> colbert_bias;
  std::vector<float> sparse_weight;
  float sparse_bias = 0;
};

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// A head's weight (out, H) and bias (out) from DIR/NAME.safetensors ("weight", "bias", as
// torch.nn.Linear's state dict holds them).
std::pair<std::vector<float>, std::vector<float>> read_linear(const std::filesystem::path& dir, const std::string& name,
                                                              int64_t hidden, int64_t out) {
  const auto file = dir / (name + ".safetensors");
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    if (std::filesystem::exists(dir / (name + ".pt"), ec))
      throw Error((dir / (name + ".pt")).string() + " is not converted yet: /usr/bin/python3 tools/convert_checkpoint.py " +
                      dir.string() + " writes " + file.filename().string(),
                  ErrorKind::kInvalidModel);
    throw Error(dir.string() + ": no " + name + ".pt (nor " + file.filename().string() +
                    "): not a bge-m3 folder with its ColBERT and sparse heads",
                ErrorKind::kInvalidModel);
  }
  const WeightStore store = WeightStore::open_file(file);
  const auto get = [&](const char* tensor, std::vector<int64_t> shape) {
    const TensorInfo* t = store.find(tensor);
    if (!t) throw Error(file.string() + ": tensor \"" + tensor + "\" is missing", ErrorKind::kInvalidModel);
    if (out < 0) out = t->shape.empty() ? 0 : t->shape[0], shape[0] = out;
    if (t->shape != shape)
      throw Error(file.string() + ": tensor \"" + tensor + "\" has shape " + shape_text(t->shape) + ", expected " +
                      shape_text(shape) + " (the model's hidden size is " + std::to_string(hidden) + ")",
                  ErrorKind::kInvalidModel);
    return store.to_float(*t);
  };
  std::vector<float> weight = get("weight", {out, hidden});
  std::vector<float> bias = get("bias", {out});
  return {std::move(weight), std::move(bias)};
}

// The first n values of x, L2-normalised when asked, into out.
void finish_vector(const float* x, size_t n, const M3Options& o, float* out) {
  std::copy_n(x, n, out);
  if (o.normalize) l2_normalize(std::span<float>(out, n));
}

}  // namespace

M3Embedder::M3Embedder(Embedder texts, std::shared_ptr<const Heads> heads)
    : texts_(std::move(texts)), heads_(std::move(heads)) {}

M3Embedder M3Embedder::load(const std::filesystem::path& dir, const LoadOptions& options) {
  return with_heads(Embedder::load(dir, options), dir);
}

M3Embedder M3Embedder::with_heads(Embedder texts, const std::filesystem::path& dir) {
  const int64_t H = texts.model().config().hidden_size;
  auto heads = std::make_shared<Heads>();
  auto [colbert, colbert_bias] = read_linear(dir, "colbert_linear", H, -1);
  heads->colbert = kernels::PackedWeight(colbert.data(), colbert_bias.size(), static_cast<size_t>(H));
  heads->colbert_bias = std::move(colbert_bias);
  auto [sparse, sparse_bias] = read_linear(dir, "sparse_linear", H, 1);
  heads->sparse_weight = std::move(sparse);
  heads->sparse_bias = sparse_bias[0];
  return M3Embedder(std::move(texts), std::move(heads));
}

size_t M3Embedder::dimension() const { return static_cast<size_t>(model().config().hidden_size); }
size_t M3Embedder::colbert_dimension() const { return heads_->colbert.n(); }

PreparedText M3Embedder::prepare(std::string_view text, const M3Options& options) const {
  // As FlagEmbedding's tokenizer(texts, truncation=True, max_length=...): no prompt, no stripping.
  EmbedOptions o;
  o.strip = false;
  o.prompt = "";
  o.max_length = std::max<size_t>(options.max_length, 2);
  return texts_.prepare(text, o);
}

M3Output M3Embedder::run(std::span<const PreparedText> texts, const M3Options& options) const {
  Batch batch;
  for (const PreparedText& t : texts) batch.add_sequence(t.ids);
  const size_t B = texts.size(), H = dimension(), C = colbert_dimension();
  const size_t D = options.truncate_dim ? std::min(options.truncate_dim, H) : H;
  const size_t Dc = options.truncate_dim ? std::min(options.truncate_dim, C) : C;
  M3Output out;
  if (B == 0) return out;
  const Outputs o = model().forward(batch);
  const Matrix& h = o.last_hidden_state;
  if (options.dense) {
    out.dense = Matrix(B, D);
    for (size_t b = 0; b < B; ++b) finish_vector(h.row(batch.offsets[b]), D, options, out.dense.row(b));
  }
  if (options.sparse) {
    // FlagEmbedding's _process_token_weights: tokenizer.special_tokens_map's cls, eos, pad and unk.
    std::vector<int32_t> unused{tokenizer().bos_id(), tokenizer().eos_id(), tokenizer().pad_id()};
    if (auto unk = tokenizer().unk_id()) unused.push_back(*unk);
    for (size_t b = 0; b < B; ++b) {
      std::map<int32_t, float> best;
      for (size_t t = batch.offsets[b]; t < batch.offsets[b + 1]; ++t) {
        const int32_t id = batch.ids[t];
        if (std::find(unused.begin(), unused.end(), id) != unused.end()) continue;
        double dot = 0;
        for (size_t k = 0; k < H; ++k) dot += static_cast<double>(h.row(t)[k]) * heads_->sparse_weight[k];
        const float w = std::max(static_cast<float>(dot) + heads_->sparse_bias, 0.0f);
        if (w > 0 && w > best[id]) best[id] = w;
      }
      SparseVector v;
      for (const auto& [id, w] : best)
        if (w > 0) v.indices.push_back(id), v.values.push_back(w);
      out.lexical.push_back(std::move(v));
    }
  }
  if (options.colbert) {
    Matrix all(h.rows, C);  // every token's, <s> too: one product over the batch
    kernels::packed_linear(all.data.data(), C, h.data.data(), heads_->colbert, heads_->colbert_bias.data(), h.rows);
    for (size_t b = 0; b < B; ++b) {
      const size_t t0 = batch.offsets[b] + 1, n = batch.offsets[b + 1] - t0;
      Matrix m(n, Dc);
      for (size_t r = 0; r < n; ++r) finish_vector(all.row(t0 + r), Dc, options, m.row(r));
      out.colbert.push_back(std::move(m));
    }
  }
  return out;
}

M3Output M3Embedder::operator()(std::span<const std::string> texts, const M3Options& options,
                                std::vector<size_t>* truncated) const {
  M3Output out;
  const size_t H = dimension(), D = options.truncate_dim ? std::min(options.truncate_dim, H) : H;
  if (options.dense) out.dense = Matrix(texts.size(), D);
  if (options.sparse) out.lexical.resize(texts.size());
  if (options.colbert) out.colbert.resize(texts.size());
  pipeline::in_length_order(
      texts.size(), [&](size_t i) { return prepare(texts[i], options); }, options.batch_size, truncated,
      [&](std::span<const PreparedText> batch, std::span<const size_t> where) {
        M3Output part = run(batch, options);
        for (size_t i = 0; i < where.size(); ++i) {
          if (options.dense) std::copy_n(part.dense.row(i), D, out.dense.row(where[i]));
          if (options.sparse) out.lexical[where[i]] = std::move(part.lexical[i]);
          if (options.colbert) out.colbert[where[i]] = std::move(part.colbert[i]);
        }
      });
  return out;
}

std::vector<M3Scores> M3Embedder::compute_score(const std::vector<std::pair<std::string, std::string>>& pairs,
                                                std::array<double, 3> weights, size_t max_query_length,
                                                size_t max_passage_length, size_t batch_size) const {
  std::vector<std::string> queries, passages;
  for (const auto& [q, p] : pairs) queries.push_back(q), passages.push_back(p);
  M3Options o{.dense = true, .sparse = true, .colbert = true, .batch_size = batch_size, .max_length = max_query_length};
  const M3Output q = (*this)(queries, o);
  o.max_length = max_passage_length;
  const M3Output p = (*this)(passages, o);
  const double sum = weights[0] + weights[1] + weights[2];
  std::vector<M3Scores> scores;
  for (size_t i = 0; i < pairs.size(); ++i) {
    M3Scores s;
    for (size_t k = 0; k < q.dense.cols; ++k) s.dense += static_cast<double>(q.dense.row(i)[k]) * p.dense.row(i)[k];
    s.sparse = lexical_matching_score(q.lexical[i], p.lexical[i]);
    s.colbert = colbert_score(q.colbert[i], p.colbert[i]);
    s.sparse_dense = (s.sparse * weights[1] + s.dense * weights[0]) / (weights[1] + weights[0]);
    s.colbert_sparse_dense = (s.colbert * weights[2] + s.sparse * weights[1] + s.dense * weights[0]) / sum;
    scores.push_back(s);
  }
  return scores;
}

double lexical_matching_score(const SparseVector& a, const SparseVector& b) { return sparse_dot(a, b); }

double colbert_score(const Matrix& q, const Matrix& p) {
  if (q.rows == 0 || p.rows == 0) return 0;
  double total = 0;
  for (size_t i = 0; i < q.rows; ++i) {
    double best = -1e300;
    for (size_t j = 0; j < p.rows; ++j) {
      double dot = 0;
      for (size_t k = 0; k < std::min(q.cols, p.cols); ++k) dot += static_cast<double>(q.row(i)[k]) * p.row(j)[k];
      best = std::max(best, dot);
    }
    total += best;
  }
  return total / static_cast<double>(q.rows);
}

}  // namespace roberta
