#include "kernels/attention.h"
#include "kernels/layer_norm.h"
#include "model/parts.h"
#include "util/thread_pool.h"

#include <algorithm>

namespace roberta {

EncoderLayer load_encoder_layer(const WeightScope& s, const ModelConfig& c, kernels::Activation act) {
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
  L.act = act;
  L.plan = plan_layer(L, c);
  return L;
}

LayerPlan plan_layer(const EncoderLayer& L, const ModelConfig& c) {
  using Input = LayerPlan::Input;
  LayerPlan p;
  if (L.pre_layer_norm) return p;
  p.input = L.qkv.takes_quantized_input() && L.intermediate.takes_quantized_input() ? Input::kInt8
            : L.qkv.takes_bf16_input() && L.intermediate.takes_bf16_input() && L.output.takes_bf16_input()
                ? Input::kBf16
                : Input::kF32;
  p.qkv_bf16 = p.input != Input::kF32 && L.qkv.writes_bf16_output(kernels::Activation::kLinear) &&
               kernels::attention_takes_bf16(static_cast<size_t>(c.head_size()), L.relative, L.attention_precision);
  p.context_converted = p.qkv_bf16 && (p.input == Input::kInt8 ? L.attn_out.takes_quantized_input()
                                                                : L.attn_out.takes_bf16_input());
  p.intermediate_bf16 = L.intermediate.writes_bf16_output(L.act) &&
                        (p.input == Input::kBf16 || (p.input == Input::kInt8 && L.output.takes_quantized_input()));
  return p;
}

namespace {

using Input = LayerPlan::Input;

// x = x + dense(attention(LayerNorm(x)));  x = x + output(act(intermediate(LayerNorm(x)))), in fp32.
void prelayernorm_forward(Matrix& x, const EncoderLayer& L, const Batch& batch, const ModelConfig& c,
                          LayerWorkspace& ws) {
  const size_t T = x.rows;
  const auto H = static_cast<size_t>(c.hidden_size), I = static_cast<size_t>(c.intermediate_size);
  float* h = x.data.data();
  kernels::layer_norm(ws.normed, h, nullptr, L.attn_norm.gamma, L.attn_norm.beta, T, H, c.layer_norm_eps);
  L.qkv.apply(ws.qkv, 3 * H, ws.normed, T);
  kernels::self_attention(ws.context, ws.qkv, batch.offsets.data(), batch.num_sequences(),
                          static_cast<size_t>(c.num_attention_heads), static_cast<size_t>(c.head_size()), L.relative,
                          L.attention_precision);
  L.attn_out.apply(ws.tmp, H, ws.context, T);
  for (size_t i = 0; i < T * H; ++i) h[i] = ws.tmp[i] + h[i];
  kernels::layer_norm(ws.normed, h, nullptr, L.out_norm.gamma, L.out_norm.beta, T, H, c.layer_norm_eps);
  L.intermediate.apply(ws.intermediate, I, ws.normed, T, L.act);
  L.output.apply(ws.tmp, H, ws.intermediate, T);
  for (size_t i = 0; i < T * H; ++i) h[i] = ws.tmp[i] + h[i];
  ws.x_converted = false;
}

// The two blocks of a post-LN layer on ws, each ending in LayerNorm(tmp + x) on the rows of its
// output product as they are finished (RowsDone), which also converts them for the next product.
class PostLnLayer {
 public:
  PostLnLayer(Matrix& x, const EncoderLayer& L, const Batch& batch, const ModelConfig& c, LayerWorkspace& ws)
      : L_(L), p_(L.plan), batch_(batch), c_(c), ws_(ws), h_(x.data.data()), T_(x.rows),
        H_(static_cast<size_t>(c.hidden_size)), I_(static_cast<size_t>(c.intermediate_size)),
        heads_(static_cast<size_t>(c.num_attention_heads)), d_(static_cast<size_t>(c.head_size())) {}

  // x = LayerNorm(x + dense(softmax(Q Kᵀ / sqrt(d)) V)), Q, K, V = qkv(x)
  void attention_block() {
    if (p_.qkv_bf16)
      attention_from_bf16_qkv();
    else {
      apply_to_x(L_.qkv, ws_.qkv, 3 * H_, kernels::Activation::kLinear, ws_.x_converted, nullptr);
      attention(ws_.context, ws_.qkv);
    }
    const kernels::RowsDone done = [&](size_t m0, size_t m1) {
      add_and_norm(L_.attn_norm, m0, m1);
      convert_x_rows(m0, m1);
    };
    constexpr auto linear = kernels::Activation::kLinear;
    if (p_.context_converted && p_.input == Input::kInt8)
      L_.attn_out.apply(ws_.tmp, H_, ws_.context_int8.rows(), T_, linear, &done);
    else if (p_.context_converted)
      L_.attn_out.apply(ws_.tmp, H_, kernels::Bf16Rows{ws_.context_bf16}, T_, linear, &done);
    else
      L_.attn_out.apply(ws_.tmp, H_, ws_.context, T_, linear, &done);
    ws_.x_converted = p_.converts();
  }

  // x = LayerNorm(x + output(act(intermediate(x)))); x left converted for the next layer if any.
  // In bf16, act(intermediate) reaches the output product as bf16 pairs: written so by the
  // intermediate product's epilogue where the plan says so, else rounded tile by tile as that
  // product finishes them (TilesDone). int8 quantizes it from the bf16 pairs, or the output product
  // quantizes fp32 itself: not inside the intermediate product, where a row's scale would need the
  // whole row, so its tasks would take whole rows, the whole weight per band, which is slower
  // (docs/performance.md#figures-behind-the-code).
  void feed_forward_block(bool next_layer) {
    const size_t ip = (I_ + 1) / 2;
    if (p_.intermediate_bf16 && p_.input == Input::kInt8) {
      L_.intermediate.apply_to_bf16(ws_.intermediate_bf16, ip, ws_.x_int8.rows(), T_, L_.act);
      quantize_pairs(ws_.intermediate_bf16, ip, I_, ws_.intermediate_int8, 16);
    } else if (p_.intermediate_bf16) {
      L_.intermediate.apply_to_bf16(ws_.intermediate_bf16, ip, kernels::Bf16Rows{ws_.x_bf16}, T_, L_.act);
    } else {
      const kernels::TilesDone to_bf16 = [&](size_t m0, size_t m1, size_t c0, size_t c1) {
        kernels::to_bf16_pairs(ws_.intermediate + m0 * I_ + c0, I_, m1 - m0, c1 - c0,
                               ws_.intermediate_bf16 + m0 * ip + c0 / 2, ip);
      };
      apply_to_x(L_.intermediate, ws_.intermediate, I_, L_.act, ws_.x_converted,
                 p_.input == Input::kBf16 ? &to_bf16 : nullptr);
    }
    // (the intermediate product, the last reader of x converted, has finished)
    const kernels::RowsDone done = [&](size_t m0, size_t m1) {
      add_and_norm(L_.out_norm, m0, m1);
      if (next_layer) convert_x_rows(m0, m1);
    };
    constexpr auto linear = kernels::Activation::kLinear;
    if (p_.intermediate_bf16 && p_.input == Input::kInt8)
      L_.output.apply(ws_.tmp, H_, ws_.intermediate_int8.rows(), T_, linear, &done);
    else if (p_.input == Input::kBf16)
      L_.output.apply(ws_.tmp, H_, kernels::Bf16Rows{ws_.intermediate_bf16}, T_, linear, &done);
    else
      L_.output.apply(ws_.tmp, H_, ws_.intermediate, T_, linear, &done);
    ws_.x_converted = p_.converts() && next_layer;
  }

 private:
  // Q, K, V rounded to bf16 by the QKV product's epilogue, head by head (each head's a (T, 64)
  // matrix, its rows 128 bytes apart: kernels::self_attention), and the attention from them: the
  // values the AMX attention would round them to, without fp32 Q, K, V written and read again. The
  // context comes out as bf16 pairs (int8: quantized from there) where the plan says so.
  void attention_from_bf16_qkv() {
    if (!ws_.x_converted)
      ThreadPool::global()->parallel_for((T_ + 63) / 64, [&](size_t t) {
        convert_x_rows(t * 64, std::min(T_, t * 64 + 64));
      });
    auto* qkv_pairs = reinterpret_cast<uint32_t*>(ws_.qkv_bf16);
    const kernels::ColumnGroups heads_apart{d_, T_ * d_ / 2};
    if (p_.input == Input::kInt8)
      L_.qkv.apply_to_bf16(qkv_pairs, d_ / 2, ws_.x_int8.rows(), T_, kernels::Activation::kLinear, heads_apart);
    else
      L_.qkv.apply_to_bf16(qkv_pairs, d_ / 2, kernels::Bf16Rows{ws_.x_bf16}, T_, kernels::Activation::kLinear,
                           heads_apart);
    if (!p_.context_converted) return attention(ws_.context, ws_.qkv_bf16);
    attention(ws_.context_bf16, ws_.qkv_bf16);
    if (p_.input == Input::kInt8) quantize_pairs(ws_.context_bf16, H_ / 2, H_, ws_.context_int8, 32);
  }

  template <class Context, class Qkv>
  void attention(Context* context, const Qkv* qkv) {
    kernels::self_attention(context, qkv, batch_.offsets.data(), batch_.num_sequences(), heads_, d_, L_.relative,
                            L_.attention_precision);
  }

  // y = a(x · Wᵀ + b), from x converted (where `converted`: the layer before, or the attention
  // block, left it in ws) or from fp32 x.
  void apply_to_x(const PackedLinear& linear, float* y, size_t ldy, kernels::Activation a, bool converted,
                  const kernels::TilesDone* tiles_done) {
    if (converted && p_.input == Input::kInt8)
      linear.apply(y, ldy, ws_.x_int8.rows(), T_, a, nullptr, tiles_done);
    else if (converted && p_.input == Input::kBf16)
      linear.apply(y, ldy, kernels::Bf16Rows{ws_.x_bf16}, T_, a, nullptr, tiles_done);
    else
      linear.apply(y, ldy, h_, T_, a, nullptr, tiles_done);
  }

  // x's rows [m0, m1) = LayerNorm(tmp + x) with `norm`.
  void add_and_norm(const LayerNormWeights& norm, size_t m0, size_t m1) {
    kernels::layer_norm_rows(h_ + m0 * H_, ws_.tmp + m0 * H_, h_ + m0 * H_, norm.gamma, norm.beta, m1 - m0, H_,
                             c_.layer_norm_eps);
  }

  // x's rows [m0, m1) converted to the products' input format (nothing in fp32).
  void convert_x_rows(size_t m0, size_t m1) {
    if (p_.input == Input::kInt8)
      kernels::quantize_rows(h_ + m0 * H_, m1 - m0, H_, ws_.x_int8.quads + m0 * ((H_ + 3) / 4),
                             ws_.x_int8.scales + m0);
    else if (p_.input == Input::kBf16)
      kernels::to_bf16_pairs(h_ + m0 * H_, m1 - m0, H_, ws_.x_bf16 + m0 * ((H_ + 1) / 2));
  }

  // T rows of k values as bf16 pairs (row stride ldp) quantized into out, on the pool.
  void quantize_pairs(const uint32_t* pairs, size_t ldp, size_t k, const Int8Buffer& out, size_t rows_per_task) {
    const size_t kq = (k + 3) / 4;
    ThreadPool::global()->parallel_for((T_ + rows_per_task - 1) / rows_per_task, [&](size_t t) {
      const size_t m0 = t * rows_per_task, rows = std::min(rows_per_task, T_ - m0);
      kernels::quantize_bf16_rows(pairs + m0 * ldp, ldp, rows, k, out.quads + m0 * kq, out.scales + m0);
    });
  }

  const EncoderLayer& L_;
  const LayerPlan& p_;
  const Batch& batch_;
  const ModelConfig& c_;
  LayerWorkspace& ws_;
  float* h_;
  const size_t T_, H_, I_, heads_, d_;
};

}  // namespace

void encoder_layer_forward(Matrix& x, const EncoderLayer& L, const Batch& batch, const ModelConfig& c,
                           LayerWorkspace& ws, bool next_layer) {
  if (L.pre_layer_norm) return prelayernorm_forward(x, L, batch, c, ws);
  PostLnLayer layer(x, L, batch, c, ws);
  layer.attention_block();
  layer.feed_forward_block(next_layer);
}

}  // namespace roberta
