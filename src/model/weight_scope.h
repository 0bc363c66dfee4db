#pragma once
// Looking up a checkpoint's tensors by name with the shape config.json implies, the way
// text-embeddings-inference's `vb.pp("attention.self.query").get((H, H), "weight")` does:
//
//   WeightLoader loader(store, dir, WeightType::kF32);
//   WeightScope layer = loader.encoder().sub("encoder.layer.0");
//   PackedLinear out = layer.packed("attention.output.dense", H, H);          // (H, H) + (H)
//   LayerNormWeights ln = layer.layer_norm("attention.output.LayerNorm", H);   // weight/bias or gamma/beta
//
// The loader decides once where the encoder's tensors are (a `roberta.`, `data2vec_text.` or
// `roberta_prelayernorm.` prefix, or none), converts
// F16/BF16/unaligned tensors to fp32, counts parameters, and releases a weight's original once
// its packed copy exists.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/packed_linear.h"
#include "roberta/dev/weights.h"

namespace roberta {

struct LayerNormWeights {
  const float* gamma = nullptr;  // (H)
  const float* beta = nullptr;   // (H)
};

class WeightScope;

class WeightLoader {
 public:
  WeightLoader(WeightStore store, std::filesystem::path dir, WeightType type);

  WeightScope root();     // names as stored: lm_head.*, classifier.*, ...
  WeightScope encoder();  // the base model's tensors: "roberta." + name, or name

  const WeightStore& store() const { return store_; }
  WeightType type() const { return type_; }
  size_t parameter_count() const { return params_; }
  // The checkpoint's tensors holding NaN or infinite values, for a warning: up to three named with
  // their count and first position ([i, j]), then how many more; or that none does. Reads every
  // tensor (the released ones' pages are dropped again after).
  std::string non_finite_summary() const;
  // Bytes held: unpacked tensors (converted, or mapped and used in place); packed copies not included.
  size_t unpacked_bytes() const;

 private:
  friend class WeightScope;
  const float* tensor(const std::string& name, const std::vector<int64_t>& shape);
  void release(const std::string& name, const float* data);

  WeightStore store_;
  std::filesystem::path dir_;
  WeightType type_;
  std::string encoder_prefix_;
  std::list<std::vector<float>> owned_;  // converted tensors (stable addresses)
  std::set<std::string> released_;       // mapped tensors whose packed copy is used instead
  size_t params_ = 0;
};

class WeightScope {
 public:
  WeightScope(WeightLoader& loader, std::string prefix) : loader_(&loader), prefix_(std::move(prefix)) {}

  // The scope of the tensors under `name` ("encoder.layer.3" -> prefix + "encoder.layer.3.").
  WeightScope sub(const std::string& name) const { return {*loader_, prefix_ + name + "."}; }
  std::string full_name(const std::string& name) const { return prefix_ + name; }
  bool has(const std::string& name) const { return loader_->store_.find(prefix_ + name) != nullptr; }

  // The tensor `name` as fp32; Error (kInvalidModel) naming it when missing or of another shape.
  const float* tensor(const std::string& name, const std::vector<int64_t>& shape) const;
  // A callback that drops the mapped checkpoint's pages of tensor `name` (nothing for a tensor
  // converted to fp32, or a missing one): for a weight packed later (LazyPackedWeight). It stays
  // valid while the loader does.
  std::function<void()> page_release(const std::string& name) const;
  // name.weight (out, in) and name.bias (out), unpacked.
  LinearWeights linear(const std::string& name, size_t out, size_t in) const;
  // The same packed for the GEMM, in the loader's weight type unless `type` says otherwise; the
  // originals are released.
  PackedLinear packed(const std::string& name, size_t out, size_t in, std::optional<WeightType> type = {}) const;
  // Several layers with the same input joined into one product (Q, K, V), each (out, in).
  PackedLinear packed_joined(const std::vector<std::string>& names, size_t out, size_t in,
                             std::optional<WeightType> type = {}) const;
  // The weight type of the small task heads (LM head dense, pooler, classifiers): fp32 under int8,
  // whose rounding there costs more accuracy than the int8 product saves time (they run on a few
  // rows); the loader's type otherwise.
  WeightType head_type() const {
    return loader_->type() == WeightType::kInt8 ? WeightType::kF32 : loader_->type();
  }
  // The encoder's weight type (the loader's).
  WeightType type() const { return loader_->type(); }
  // name.weight / name.bias, or the legacy name.gamma / name.beta.
  LayerNormWeights layer_norm(const std::string& name, size_t size) const;

 private:
  WeightLoader* loader_;
  std::string prefix_;
};

}  // namespace roberta
