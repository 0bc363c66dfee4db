#include "model/weight_scope.h"

#include <algorithm>

#include "roberta/error.h"

namespace roberta {

namespace {

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// "[i, j, ...]": flat index `flat` of a row-major tensor of `shape`.
std::string index_in(size_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> at(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const auto extent = static_cast<size_t>(std::max<int64_t>(shape[d], 1));
    at[d] = static_cast<int64_t>(flat % extent), flat /= extent;
  }
  return shape_string(at);
}

}  // namespace

WeightLoader::WeightLoader(WeightStore store, std::filesystem::path dir, WeightType type)
    : store_(std::move(store)), dir_(std::move(dir)), type_(type) {
  // The base model's attribute name in the task models of each family; "" for a bare RobertaModel.
  for (const char* prefix : {"roberta.", "data2vec_text.", "roberta_prelayernorm.", ""})
    if (store_.find(std::string(prefix) + "embeddings.word_embeddings.weight")) {
      encoder_prefix_ = prefix;
      return;
    }
  throw Error(dir_.string() + ": no word embeddings (expected \"embeddings.word_embeddings.weight\", with or without "
                              "the prefix roberta., data2vec_text. or roberta_prelayernorm.)",
              ErrorKind::kInvalidModel);
}

WeightScope WeightLoader::root() { return {*this, ""}; }
WeightScope WeightLoader::encoder() { return {*this, encoder_prefix_}; }

const float* WeightLoader::tensor(const std::string& name, const std::vector<int64_t>& shape) {
  const TensorInfo* t = store_.find(name);
  if (!t) throw Error(dir_.string() + ": tensor \"" + name + "\" is missing", ErrorKind::kInvalidModel);
  if (t->shape != shape)
    throw Error(t->file + ": tensor \"" + name + "\" has shape " + shape_string(t->shape) + " but config.json implies " +
                    shape_string(shape),
                ErrorKind::kInvalidModel);
  params_ += static_cast<size_t>(t->numel());
  if (const float* in_place = WeightStore::f32_in_place(*t)) return in_place;
  owned_.push_back(store_.to_float(*t));
  return owned_.back().data();
}

// Once packed, a weight's original is not read again (but by non_finite_summary, which drops its
// pages again): free its fp32 conversion, or let the kernel drop its pages of the mapped file, so
// the weights are not held twice.
void WeightLoader::release(const std::string& name, const float* data) {
  for (auto it = owned_.begin(); it != owned_.end(); ++it)
    if (it->data() == data) {
      owned_.erase(it);
      return;
    }
  if (const TensorInfo* t = store_.find(name)) store_.release_pages(*t);
  released_.insert(name);
}

size_t WeightLoader::unpacked_bytes() const {
  size_t n = 0;
  for (const auto& v : owned_) n += v.size() * sizeof(float);
  for (const auto& [name, t] : store_.tensors())
    if (WeightStore::f32_in_place(t) && !released_.count(name)) n += t.nbytes;
  return n;
}

std::string WeightLoader::non_finite_summary() const {
  std::string named;
  size_t tensors = 0;
  for (const auto& [name, t] : store_.tensors()) {
    size_t first = 0;
    const size_t bad = store_.count_non_finite(t, &first);
    if (released_.count(name)) store_.release_pages(t);  // (read again just now)
    if (bad == 0) continue;
    if (++tensors <= 3)
      named += std::string(tensors > 1 ? "; " : "") + "tensor \"" + name + "\" (" +
               std::filesystem::path(t.file).filename().string() + ") holds " + std::to_string(bad) +
               (bad == 1 ? " such value" : " such values") + " (first at " + index_in(first, t.shape) + ")";
  }
  if (tensors == 0) return "no tensor of the checkpoint holds one, so the activations overflow float32";
  if (tensors > 3) named += "; and " + std::to_string(tensors - 3) + " more tensors";
  return named;
}

const float* WeightScope::tensor(const std::string& name, const std::vector<int64_t>& shape) const {
  return loader_->tensor(prefix_ + name, shape);
}

std::function<void()> WeightScope::page_release(const std::string& name) const {
  const WeightStore* store = &loader_->store_;
  const TensorInfo* t = store->find(prefix_ + name);
  return [store, t] {
    if (t) store->release_pages(*t);
  };
}

LinearWeights WeightScope::linear(const std::string& name, size_t out, size_t in) const {
  LinearWeights l;
  l.out = out, l.in = in;
  l.weight = tensor(name + ".weight", {static_cast<int64_t>(out), static_cast<int64_t>(in)});
  l.bias = tensor(name + ".bias", {static_cast<int64_t>(out)});
  return l;
}

PackedLinear WeightScope::packed(const std::string& name, size_t out, size_t in, std::optional<WeightType> type) const {
  return packed_joined({name}, out, in, type);
}

PackedLinear WeightScope::packed_joined(const std::vector<std::string>& names, size_t out, size_t in,
                                        std::optional<WeightType> type) const {
  std::vector<LinearWeights> parts;
  for (const std::string& name : names) parts.push_back(linear(name, out, in));
  PackedLinear p = PackedLinear::join(parts, type.value_or(loader_->type()));
  for (size_t i = 0; i < names.size(); ++i) loader_->release(prefix_ + names[i] + ".weight", parts[i].weight);
  return p;
}

LayerNormWeights WeightScope::layer_norm(const std::string& name, size_t size) const {
  const std::vector<int64_t> shape{static_cast<int64_t>(size)};
  const bool legacy = !has(name + ".weight") && has(name + ".gamma");
  return {tensor(name + (legacy ? ".gamma" : ".weight"), shape), tensor(name + (legacy ? ".beta" : ".bias"), shape)};
}

}  // namespace roberta
