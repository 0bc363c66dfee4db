#include "kernels/attention.h"
#include "kernels/layer_norm.h"
#include "model/parts.h"
#include "util/thread_pool.h"

#include <algorithm>

namespace roberta {

EncoderLayer load_encoder_layer(const WeightScope& s, const ModelConfig& c) {
  const auto H = static_cast<size_t>(c.hidden_size), I = static_cast<size_t>(c.intermediate_size);
  EncoderLayer L;
  L.pre_layer_norm = c.model_type == "roberta-prelayernorm";
  if (s.type() != WeightType::kF32 && kernels::bf16_attention_pays())
    L.attention_precision = kernels::AttentionPrecision::kBf16;
  L.qkv = s.packed_joined({"attention.self.query", "attention.self.key", "attention.self.value"}, H, H);
  L.attn_out = s.packed("attention.output.dense", H, H);
  L.attn_norm = s.layer_norm(L.pre_layer_norm ? "attention.LayerNorm" : "attention.output.LayerNorm", H);
  L.intermediate = s.packed("intermediate.dense", I, H);
  L.output = s.packed("output.dense", H, I);
  L.out_norm = s.layer_norm(L.pre_layer_norm ? "intermediate.LayerNorm" : "output.LayerNorm", H);
  if (c.position_embedding_type != "absolute") {
    L.relative.distance = s.tensor("attention.self.distance_embedding.weight",
                                   {2 * c.max_position_embeddings - 1, c.head_size()});
    L.relative.max_positions = static_cast<size_t>(c.max_position_embeddings);
    L.relative.key_query = c.position_embedding_type == "relative_key_query";
  }
  return L;
}

namespace {

// Where the products take int8 or bf16 input, x is converted to it by the product before
// (RowsDone in encoder_layer_forward) for the QKV and the intermediate products, not in a pass of
// their own; in bf16 also act(intermediate), tile by tile in the intermediate product (TilesDone),
// for the output product. The products see the same values either way: outputs are the same bit
// for bit.
enum class Input { kF32, kInt8, kBf16 };

// The paths a post-LN layer takes, decided by its weights and by which conversion buffers ws has
// (never by its fp32 buffers, which layer_f32_needs allocates by this plan).
struct LayerPlan {
  Input input = Input::kF32;
  // Q, K and V rounded to bf16 by the QKV product's epilogue, head by head, for the bf16 attention.
  bool qkv16 = false;
  // With qkv16: the attention writes its context as bf16 pairs (for int8, quantized from there).
  bool context_converted = false;
  // int8: act(intermediate) written as bf16 by the product's epilogue, then quantized.
  bool int8_via_bf16 = false;
  // bf16: act(intermediate) written as bf16 by the product's epilogue.
  bool bf16_intermediate = false;
};

LayerPlan plan_layer(const EncoderLayer& L, const ModelConfig& c, kernels::Activation act, const LayerWorkspace& ws) {
  LayerPlan p;
  p.input = ws.h_quads && L.qkv.takes_quantized_input() && L.intermediate.takes_quantized_input() ? Input::kInt8
            : ws.h_pairs && ws.i_pairs && L.qkv.takes_bf16_input() && L.intermediate.takes_bf16_input() &&
                    L.output.takes_bf16_input()
                ? Input::kBf16
                : Input::kF32;
  p.qkv16 = ws.qkv16 && p.input != Input::kF32 && L.qkv.writes_bf16_output(kernels::Activation::kLinear) &&
            kernels::attention_takes_bf16(static_cast<size_t>(c.head_size()), L.relative, L.attention_precision);
  p.context_converted = p.qkv16 && ws.context_pairs &&
                        (p.input == Input::kInt8 ? ws.context_quads && L.attn_out.takes_quantized_input()
                                                 : L.attn_out.takes_bf16_input());
  p.int8_via_bf16 = p.input == Input::kInt8 && ws.i_quads && L.intermediate.writes_bf16_output(act) &&
                    L.output.takes_quantized_input();
  p.bf16_intermediate = p.input == Input::kBf16 && L.intermediate.writes_bf16_output(act);
  return p;
}

}  // namespace

LayerF32Needs layer_f32_needs(const EncoderLayer& L, const ModelConfig& c, kernels::Activation act,
                              const LayerWorkspace& ws) {
  if (L.pre_layer_norm) return {true, true, true};
  const LayerPlan p = plan_layer(L, c, act, ws);
  return {!p.qkv16, !p.context_converted, !p.int8_via_bf16 && !p.bf16_intermediate};
}

bool encoder_layer_forward(Matrix& x, const EncoderLayer& L, const Batch& batch, const ModelConfig& c,
                           kernels::Activation act, const LayerWorkspace& ws, bool x_converted, bool convert_x) {
  const size_t T = x.rows;
  const auto H = static_cast<size_t>(c.hidden_size), I = static_cast<size_t>(c.intermediate_size);
  const auto heads = static_cast<size_t>(c.num_attention_heads), d = static_cast<size_t>(c.head_size());
  float* h = x.data.data();
  if (L.pre_layer_norm) {
    // x = x + dense(attention(LayerNorm(x)));  x = x + output(act(intermediate(LayerNorm(x))))
    kernels::layer_norm(ws.normed, h, nullptr, L.attn_norm.gamma, L.attn_norm.beta, T, H, c.layer_norm_eps);
    L.qkv.apply(ws.qkv, 3 * H, ws.normed, T);
    kernels::self_attention(ws.context, ws.qkv, batch.offsets.data(), batch.num_sequences(), heads, d, L.relative,
                            L.attention_precision);
    L.attn_out.apply(ws.tmp, H, ws.context, T);
    for (size_t i = 0; i < T * H; ++i) h[i] = ws.tmp[i] + h[i];
    kernels::layer_norm(ws.normed, h, nullptr, L.out_norm.gamma, L.out_norm.beta, T, H, c.layer_norm_eps);
    L.intermediate.apply(ws.intermediate, I, ws.normed, T, act);
    L.output.apply(ws.tmp, H, ws.intermediate, T);
    for (size_t i = 0; i < T * H; ++i) h[i] = ws.tmp[i] + h[i];
    return false;
  }
  const LayerPlan plan = plan_layer(L, c, act, ws);
  const Input input = plan.input;
  const size_t hq = (H + 3) / 4, hp = (H + 1) / 2, ip = (I + 1) / 2;
  // y = act(x · Wᵀ + b) with x converted where the layer before left it so (x_converted) or where
  // attn_done did.
  const auto apply_to_x = [&](const PackedLinear& linear, float* y, size_t ldy, kernels::Activation a, bool converted,
                              const kernels::TilesDone* tiles_done) {
    if (converted && input == Input::kInt8)
      linear.apply(y, ldy, kernels::QuantizedRows{ws.h_quads, ws.h_scales}, T, a, nullptr, tiles_done);
    else if (converted && input == Input::kBf16)
      linear.apply(y, ldy, kernels::Bf16Rows{ws.h_pairs}, T, a, nullptr, tiles_done);
    else
      linear.apply(y, ldy, h, T, a, nullptr, tiles_done);
  };
  // int8: T rows of k values as bf16 pairs (row stride ldp) quantized for the next product, into
  // quads (row stride (k + 3) / 4) and scales, on the pool, rows_per_task rows a task.
  const auto quantize_pairs = [&](const uint32_t* pairs, size_t ldp, size_t k, uint32_t* quads, float* scales,
                                  size_t rows_per_task) {
    const size_t kq = (k + 3) / 4;
    ThreadPool::global()->parallel_for((T + rows_per_task - 1) / rows_per_task, [&](size_t t) {
      const size_t m0 = t * rows_per_task, rows = std::min(rows_per_task, T - m0);
      kernels::quantize_bf16_rows(pairs + m0 * ldp, ldp, rows, k, quads + m0 * kq, scales + m0);
    });
  };
  const auto convert_x_rows = [&](size_t m0, size_t m1) {
    if (input == Input::kInt8)
      kernels::quantize_rows(h + m0 * H, m1 - m0, H, ws.h_quads + m0 * hq, ws.h_scales + m0);
    else if (input == Input::kBf16)
      kernels::to_bf16_pairs(h + m0 * H, m1 - m0, H, ws.h_pairs + m0 * hp);
  };
  // attention: x = LayerNorm(x + dense(softmax(Q Kᵀ / sqrt(d)) V))
  // (context_converted: ws.context_pairs (bf16) or ws.context_quads (int8) hold the context)
  const bool context_converted = plan.context_converted;
  if (plan.qkv16) {
    // (Q, K and V rounded to bf16 by the QKV product's epilogue, as the AMX attention rounds them:
    // the same results, without 9 MB of fp32 Q, K, V written and read again for 8 x 128
    // roberta-base tokens, nor their rounding in the attention; docs/performance.md#figures-behind-the-code)
    if (!x_converted)
      ThreadPool::global()->parallel_for((T + 63) / 64, [&](size_t t) {
        convert_x_rows(t * 64, std::min(T, t * 64 + 64));
      });
    // (head by head: each head's Q, K, V a (T, 64) matrix, its rows 128 bytes apart rather than
    // 4.6 KB; kernels::self_attention)
    auto* qkv_pairs = reinterpret_cast<uint32_t*>(ws.qkv16);
    const kernels::ColumnGroups heads_apart{d, T * d / 2};
    if (input == Input::kInt8)
      L.qkv.apply_to_bf16(qkv_pairs, d / 2, kernels::QuantizedRows{ws.h_quads, ws.h_scales}, T,
                          kernels::Activation::kLinear, heads_apart);
    else
      L.qkv.apply_to_bf16(qkv_pairs, d / 2, kernels::Bf16Rows{ws.h_pairs}, T, kernels::Activation::kLinear,
                          heads_apart);
    // (the context rounded to bf16 as the attention writes it, for the next product: rather than
    // fp32 converted in a pass of its own; int8 quantizes it from there)
    if (context_converted) {
      kernels::self_attention(ws.context_pairs, ws.qkv16, batch.offsets.data(), batch.num_sequences(), heads, d,
                              L.relative, L.attention_precision);
      if (input == Input::kInt8)
        quantize_pairs(ws.context_pairs, H / 2, H, ws.context_quads, ws.context_scales, 32);
    } else {
      kernels::self_attention(ws.context, ws.qkv16, batch.offsets.data(), batch.num_sequences(), heads, d, L.relative,
                              L.attention_precision);
    }
  } else {
    apply_to_x(L.qkv, ws.qkv, 3 * H, kernels::Activation::kLinear, x_converted, nullptr);
    kernels::self_attention(ws.context, ws.qkv, batch.offsets.data(), batch.num_sequences(), heads, d, L.relative,
                            L.attention_precision);
  }
  // Work on rows as soon as a product has finished them, while they are in cache: x = LayerNorm(tmp
  // + x) after the attention's and the feed-forward's output products, and where converted, x for
  // the feed-forward and for the next layer. (act(intermediate) is not quantized the same way for
  // the output product: the intermediate product's tasks would then each take whole 3072-wide rows,
  // the whole weight per band, rather than groups of panels, which is slower
  // (docs/performance.md#figures-behind-the-code). Rounding to bf16 needs no row maximum, so it goes
  // tile by tile.)
  const kernels::RowsDone attn_done = [&](size_t m0, size_t m1) {
    kernels::layer_norm_rows(h + m0 * H, ws.tmp + m0 * H, h + m0 * H, L.attn_norm.gamma, L.attn_norm.beta, m1 - m0, H,
                             c.layer_norm_eps);
    convert_x_rows(m0, m1);
  };
  const kernels::RowsDone out_done = [&](size_t m0, size_t m1) {
    kernels::layer_norm_rows(h + m0 * H, ws.tmp + m0 * H, h + m0 * H, L.out_norm.gamma, L.out_norm.beta, m1 - m0, H,
                             c.layer_norm_eps);
    // (the feed-forward's first product, the last reader of ws.h_quads / ws.h_pairs, has finished)
    if (convert_x) convert_x_rows(m0, m1);
  };
  if (context_converted && input == Input::kInt8)
    L.attn_out.apply(ws.tmp, H, kernels::QuantizedRows{ws.context_quads, ws.context_scales}, T,
                     kernels::Activation::kLinear, &attn_done);
  else if (context_converted)
    L.attn_out.apply(ws.tmp, H, kernels::Bf16Rows{ws.context_pairs}, T, kernels::Activation::kLinear, &attn_done);
  else
    L.attn_out.apply(ws.tmp, H, ws.context, T, kernels::Activation::kLinear, &attn_done);
  // feed-forward: x = LayerNorm(x + output(act(intermediate(x))))
  const kernels::TilesDone intermediate_done = [&](size_t m0, size_t m1, size_t c0, size_t c1) {
    kernels::to_bf16_pairs(ws.intermediate + m0 * I + c0, I, m1 - m0, c1 - c0, ws.i_pairs + m0 * ip + c0 / 2, ip);
  };
  const bool int8_via_bf16 = plan.int8_via_bf16;
  if (int8_via_bf16) {
    // (int8: act(intermediate) rounded to bf16 by the product's epilogue, then quantized from
    // there: the fp32 intermediate, 12 MB for 8 x 128 roberta-base tokens, is neither written nor
    // read twice; docs/performance.md#figures-behind-the-code)
    L.intermediate.apply_to_bf16(ws.i_pairs, ip, kernels::QuantizedRows{ws.h_quads, ws.h_scales}, T, act);
    quantize_pairs(ws.i_pairs, ip, I, ws.i_quads, ws.i_scales, 16);
  } else if (plan.bf16_intermediate)
    // (our AMX product rounds act(intermediate) in its epilogue: the fp32 intermediate, 12 MB for
    // 8 x 128 roberta-base tokens, is never written; the same values as the tile hook's)
    L.intermediate.apply_to_bf16(ws.i_pairs, ip, kernels::Bf16Rows{ws.h_pairs}, T, act);
  else
    apply_to_x(L.intermediate, ws.intermediate, I, act, input != Input::kF32,
               input == Input::kBf16 ? &intermediate_done : nullptr);
  if (int8_via_bf16)
    L.output.apply(ws.tmp, H, kernels::QuantizedRows{ws.i_quads, ws.i_scales}, T, kernels::Activation::kLinear,
                   &out_done);
  else if (input == Input::kBf16)
    L.output.apply(ws.tmp, H, kernels::Bf16Rows{ws.i_pairs}, T, kernels::Activation::kLinear, &out_done);
  else
    L.output.apply(ws.tmp, H, ws.intermediate, T, kernels::Activation::kLinear, &out_done);
  return input != Input::kF32 && convert_x;
}

}  // namespace roberta
