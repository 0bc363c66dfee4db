#include "model/layer_workspace.h"

#include <algorithm>

#include "model/parts.h"

namespace roberta {

namespace {
// The thread's buffers, one per role (util/scratch.h).
std::vector<uint32_t>& u32_buffer(size_t i) {
  thread_local std::vector<uint32_t> buffers[7];
  return buffers[i];
}
std::vector<float>& f32_buffer(size_t i) {
  thread_local std::vector<float> buffers[8];
  return buffers[i];
}
}  // namespace

ForwardWorkspace::Sizes ForwardWorkspace::sizes(const std::vector<EncoderLayer>& layers, const ModelConfig& c,
                                                size_t T) {
  const auto H = static_cast<size_t>(c.hidden_size), I = static_cast<size_t>(c.intermediate_size);
  const size_t hq = (H + 3) / 4, hp = (H + 1) / 2, iq = (I + 3) / 4, ip = (I + 1) / 2;
  Sizes s{};
  s.tmp = T * H;
  for (const EncoderLayer& L : layers) {
    const LayerPlan& p = L.plan;
    const bool int8 = p.input == LayerPlan::Input::kInt8, bf16 = p.input == LayerPlan::Input::kBf16;
    const auto need = [](size_t& size, bool used, size_t n) { size = std::max(size, used ? n : 0); };
    need(s.qkv, !p.qkv_bf16, T * 3 * H);
    need(s.context, !p.context_converted, T * H);
    need(s.intermediate, !p.intermediate_bf16, T * I);
    need(s.normed, L.pre_layer_norm, T * H);
    need(s.x_quads, int8, T * hq);
    need(s.x_scales, int8, T);
    need(s.x_pairs, bf16, T * hp);
    need(s.qkv_pairs, p.qkv_bf16, T * 3 * H / 2);
    need(s.c_pairs, p.context_converted, T * H / 2);
    need(s.c_quads, p.context_converted && int8, T * hq);
    need(s.c_scales, p.context_converted && int8, T);
    need(s.i_pairs, bf16 || (int8 && p.intermediate_bf16), T * ip);
    need(s.i_quads, int8 && p.intermediate_bf16, T * iq);
    need(s.i_scales, int8 && p.intermediate_bf16, T);
  }
  return s;
}

ForwardWorkspace::ForwardWorkspace(const std::vector<EncoderLayer>& layers, const ModelConfig& c, size_t T)
    : ForwardWorkspace(sizes(layers, c, T)) {}

ForwardWorkspace::ForwardWorkspace(const Sizes& s)
    : x_quads_(u32_buffer(0), s.x_quads), x_pairs_(u32_buffer(1), s.x_pairs), i_pairs_(u32_buffer(2), s.i_pairs),
      i_quads_(u32_buffer(3), s.i_quads), qkv_pairs_(u32_buffer(4), s.qkv_pairs), c_pairs_(u32_buffer(5), s.c_pairs),
      c_quads_(u32_buffer(6), s.c_quads), x_scales_(f32_buffer(0), s.x_scales), i_scales_(f32_buffer(1), s.i_scales),
      c_scales_(f32_buffer(2), s.c_scales), qkv_(f32_buffer(3), s.qkv), context_(f32_buffer(4), s.context),
      tmp_(f32_buffer(5), s.tmp), intermediate_(f32_buffer(6), s.intermediate), normed_(f32_buffer(7), s.normed) {
  const auto f32 = [](const util::Scratch<float>& b, size_t n) { return n ? b.data() : nullptr; };
  const auto u32 = [](const util::Scratch<uint32_t>& b, size_t n) { return n ? b.data() : nullptr; };
  ws_.qkv = f32(qkv_, s.qkv);
  ws_.context = f32(context_, s.context);
  ws_.tmp = tmp_.data();
  ws_.intermediate = f32(intermediate_, s.intermediate);
  ws_.normed = f32(normed_, s.normed);
  ws_.x_int8 = {u32(x_quads_, s.x_quads), f32(x_scales_, s.x_scales)};
  ws_.x_bf16 = u32(x_pairs_, s.x_pairs);
  ws_.qkv_bf16 = reinterpret_cast<uint16_t*>(u32(qkv_pairs_, s.qkv_pairs));
  ws_.context_bf16 = u32(c_pairs_, s.c_pairs);
  ws_.context_int8 = {u32(c_quads_, s.c_quads), f32(c_scales_, s.c_scales)};
  ws_.intermediate_bf16 = u32(i_pairs_, s.i_pairs);
  ws_.intermediate_int8 = {u32(i_quads_, s.i_quads), f32(i_scales_, s.i_scales)};
}

}  // namespace roberta
