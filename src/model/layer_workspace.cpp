#include "model/layer_workspace.h"

#include <algorithm>

#include "model/parts.h"

namespace roberta {

namespace {
// The thread's buffers, one per role (util/scratch.h).
enum class U32 {
  kXQuads, kXPairs, kQkvPairs, kContextPairs, kContextQuads, kIntermediatePairs, kIntermediateQuads, kCount
};
enum class F32 {
  kXScales, kContextScales, kIntermediateScales, kQkv, kContext, kTmp, kIntermediate, kNormed, kCount
};
std::vector<uint32_t>& buffer(U32 role) {
  thread_local std::vector<uint32_t> buffers[static_cast<size_t>(U32::kCount)];
  return buffers[static_cast<size_t>(role)];
}
std::vector<float>& buffer(F32 role) {
  thread_local std::vector<float> buffers[static_cast<size_t>(F32::kCount)];
  return buffers[static_cast<size_t>(role)];
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
    need(s.context_pairs, p.context_converted, T * H / 2);
    need(s.context_quads, p.context_converted && int8, T * hq);
    need(s.context_scales, p.context_converted && int8, T);
    need(s.intermediate_pairs, bf16 || (int8 && p.intermediate_bf16), T * ip);
    need(s.intermediate_quads, int8 && p.intermediate_bf16, T * iq);
    need(s.intermediate_scales, int8 && p.intermediate_bf16, T);
  }
  return s;
}

ForwardWorkspace::ForwardWorkspace(const std::vector<EncoderLayer>& layers, const ModelConfig& c, size_t T)
    : ForwardWorkspace(sizes(layers, c, T)) {}

ForwardWorkspace::ForwardWorkspace(const Sizes& s)
    : x_quads_(buffer(U32::kXQuads), s.x_quads),
      x_pairs_(buffer(U32::kXPairs), s.x_pairs),
      qkv_pairs_(buffer(U32::kQkvPairs), s.qkv_pairs),
      context_pairs_(buffer(U32::kContextPairs), s.context_pairs),
      context_quads_(buffer(U32::kContextQuads), s.context_quads),
      intermediate_pairs_(buffer(U32::kIntermediatePairs), s.intermediate_pairs),
      intermediate_quads_(buffer(U32::kIntermediateQuads), s.intermediate_quads),
      x_scales_(buffer(F32::kXScales), s.x_scales),
      context_scales_(buffer(F32::kContextScales), s.context_scales),
      intermediate_scales_(buffer(F32::kIntermediateScales), s.intermediate_scales),
      qkv_(buffer(F32::kQkv), s.qkv),
      context_(buffer(F32::kContext), s.context),
      tmp_(buffer(F32::kTmp), s.tmp),
      intermediate_(buffer(F32::kIntermediate), s.intermediate),
      normed_(buffer(F32::kNormed), s.normed) {
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
  ws_.context_bf16 = u32(context_pairs_, s.context_pairs);
  ws_.context_int8 = {u32(context_quads_, s.context_quads), f32(context_scales_, s.context_scales)};
  ws_.intermediate_bf16 = u32(intermediate_pairs_, s.intermediate_pairs);
  ws_.intermediate_int8 = {u32(intermediate_quads_, s.intermediate_quads),
                           f32(intermediate_scales_, s.intermediate_scales)};
}

}  // namespace roberta
