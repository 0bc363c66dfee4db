#include "model/packed_linear.h"

#include <algorithm>

namespace roberta {

PackedLinear PackedLinear::join(const std::vector<LinearWeights>& parts, WeightType type) {
  PackedLinear p;
  // Several parts' rows one after the other, in a copy (7 MB for roberta-base's Q, K and V).
  // Packing them in place from the three matrices loads a little faster, but the freed copy is
  // what makes glibc raise its mmap threshold early in the load, so that the packed weights come
  // from its heap rather than from an mmap each: weights in mmaps make the forward pass slower
  // (docs/performance.md#figures-behind-the-code). Until the weights get an arena of their own,
  // the copy stays.
  const size_t in = parts.at(0).in;
  size_t out = 0;
  for (const LinearWeights& l : parts) out += l.out;
  std::vector<float> joined;
  const float* w = parts[0].weight;
  if (parts.size() > 1) {
    joined.resize(out * in);
    size_t row = 0;
    for (const LinearWeights& l : parts) {
      std::copy_n(l.weight, l.out * in, joined.begin() + static_cast<ptrdiff_t>(row * in));
      row += l.out;
    }
    w = joined.data();
  }
  for (const LinearWeights& l : parts) p.bias_.insert(p.bias_.end(), l.bias, l.bias + l.out);
  const kernels::Precision precision = type == WeightType::kBF16   ? kernels::Precision::kBF16
                                       : type == WeightType::kInt8 ? kernels::Precision::kInt8
                                                                   : kernels::Precision::kF32;
  if (kernels::use_onednn(precision))
    p.weight_.emplace<kernels::OneDnnWeight>(w, out, in, precision);
  else if (type == WeightType::kBF16)
    p.weight_.emplace<kernels::PackedWeightBf16>(w, out, in);
  else if (type == WeightType::kInt8)
    p.weight_.emplace<kernels::PackedWeightInt8>(w, out, in);
  else
    p.weight_.emplace<kernels::PackedWeight>(w, out, in);
  return p;
}

// f(the packed weight) for fp32 or bf16 panels; `empty` for a default-constructed layer.
template <class F, class R>
R PackedLinear::visit(F&& f, R empty) const {
  return std::visit(
      [&](const auto& w) -> R {
        if constexpr (std::is_same_v<std::decay_t<decltype(w)>, std::monostate>)
          return empty;
        else
          return f(w);
      },
      weight_);
}

void PackedLinear::apply(float* y, size_t ldy, const float* x, size_t M, kernels::Activation act,
                         const kernels::RowsDone* rows_done, const kernels::TilesDone* tiles_done) const {
  visit(
      [&](const auto& w) { return kernels::packed_linear(y, ldy, x, w, bias_.data(), M, act, rows_done, tiles_done), 0; },
      0);
}

template <class Own>
bool PackedLinear::holds(kernels::Precision p) const {
  if (const auto* w = std::get_if<kernels::OneDnnWeight>(&weight_)) return w->precision() == p;
  return std::holds_alternative<Own>(weight_);
}

template <class Own, class Rows>
void PackedLinear::apply_converted(float* y, size_t ldy, const Rows& x, size_t M, kernels::Activation act,
                                   const kernels::RowsDone* rows_done, const kernels::TilesDone* tiles_done) const {
  if (const auto* w = std::get_if<kernels::OneDnnWeight>(&weight_))
    kernels::packed_linear(y, ldy, x, *w, bias_.data(), M, act, rows_done, tiles_done);
  else
    kernels::packed_linear(y, ldy, x, std::get<Own>(weight_), bias_.data(), M, act, rows_done, tiles_done);
}

bool PackedLinear::takes_quantized_input() const { return holds<kernels::PackedWeightInt8>(kernels::Precision::kInt8); }

void PackedLinear::apply(float* y, size_t ldy, const kernels::QuantizedRows& x, size_t M, kernels::Activation act,
                         const kernels::RowsDone* rows_done, const kernels::TilesDone* tiles_done) const {
  apply_converted<kernels::PackedWeightInt8>(y, ldy, x, M, act, rows_done, tiles_done);
}

// (Our product without bf16 instructions takes fp32 x best: kernels::bf16_product_widens.)
bool PackedLinear::takes_bf16_input() const {
  if (std::holds_alternative<kernels::PackedWeightBf16>(weight_)) return !kernels::bf16_product_widens();
  return holds<kernels::PackedWeightBf16>(kernels::Precision::kBF16);
}

void PackedLinear::apply(float* y, size_t ldy, const kernels::Bf16Rows& x, size_t M, kernels::Activation act,
                         const kernels::RowsDone* rows_done, const kernels::TilesDone* tiles_done) const {
  apply_converted<kernels::PackedWeightBf16>(y, ldy, x, M, act, rows_done, tiles_done);
}

bool PackedLinear::writes_bf16_output(kernels::Activation act) const {
  if (const auto* w = std::get_if<kernels::PackedWeightInt8>(&weight_)) return kernels::writes_bf16_output(*w, act);
  const auto* w = std::get_if<kernels::PackedWeightBf16>(&weight_);
  return w && kernels::writes_bf16_output(*w, act);
}

void PackedLinear::apply_to_bf16(uint32_t* out, size_t ldp, const kernels::QuantizedRows& x, size_t M,
                                 kernels::Activation act, const kernels::ColumnGroups& groups) const {
  kernels::packed_linear_to_bf16(out, ldp, x, std::get<kernels::PackedWeightInt8>(weight_), bias_.data(), M, act,
                                 groups);
}

void PackedLinear::apply_to_bf16(uint32_t* out, size_t ldp, const kernels::Bf16Rows& x, size_t M,
                                 kernels::Activation act, const kernels::ColumnGroups& groups) const {
  kernels::packed_linear_to_bf16(out, ldp, x, std::get<kernels::PackedWeightBf16>(weight_), bias_.data(), M, act,
                                 groups);
}

size_t PackedLinear::out() const { return bias_.size(); }
size_t PackedLinear::in() const { return visit([](const auto& w) { return w.k(); }, size_t{0}); }
size_t PackedLinear::bytes() const {
  return visit([](const auto& w) { return w.bytes(); }, size_t{0}) + bias_.size() * sizeof(float);
}

}  // namespace roberta
