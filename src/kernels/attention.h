#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace roberta::kernels {

// Multi-head scaled dot-product self-attention over packed sequences (no padding anywhere).
// qkv is (T, 3H): the Q, K and V projections side by side; ctx is (T, H).
// Sequence s holds tokens [offsets[s], offsets[s+1]) and attends only to itself.
// Per sequence and head: P = softmax(Q Kᵀ / sqrt(d)), ctx = P V.
// With relative position embeddings (transformers' position_embedding_type relative_key and
// relative_key_query), the raw scores get, before the 1/sqrt(d) scaling,
//   relative_key:        + q_l · E[l - r + P - 1]
//   relative_key_query:  + q_l · E[l - r + P - 1] + k_r · E[l - r + P - 1]
// where E (2P - 1, d) is the layer's distance embedding and l, r are positions in the sequence.
struct RelativePositions {
  const float* distance = nullptr;  // (2 * max_positions - 1, head_size); null: none
  size_t max_positions = 0;
  bool key_query = false;           // relative_key_query (else relative_key)
};
// The precision the products may use: kBf16 lets Q, K, V and softmax's exponentials be rounded
// to bfloat16 (fp32 sums, fp32 softmax) where the CPU has AVX512-BF16 and the head size is 64 with
// absolute positions — on AMX tiles where the CPU has them (ROBERTA_ISA amx; tested on the tiles
// against its emulation and a float64 reference); elsewhere the fp32 path runs. The bf16 and int8
// encoders ask for kBf16 where bf16_attention_pays().
enum class AttentionPrecision { kFp32, kBf16 };
void self_attention(float* ctx, const float* qkv, const size_t* offsets, size_t num_sequences, size_t heads,
                    size_t head_size, const RelativePositions& relative = {},
                    AttentionPrecision precision = AttentionPrecision::kFp32);

// The same from Q, K and V already rounded to bf16, head by head: qkv16 holds 3 · heads matrices
// (T, 64) of bf16 values, T = offsets[num_sequences], one after the other: Q of heads 0, 1, ...,
// then K, then V (as the QKV product's epilogue writes them with ColumnGroups{64, T · 32}: no fp32
// Q, K, V in memory, and each head's rows together). The same results as from their fp32 values.
// Only where attention_takes_bf16 (the AMX attention; else a roberta::Error).
bool attention_takes_bf16(size_t head_size, const RelativePositions& relative, AttentionPrecision precision);
void self_attention(float* ctx, const uint16_t* qkv16, const size_t* offsets, size_t num_sequences, size_t heads,
                    size_t head_size, const RelativePositions& relative, AttentionPrecision precision);
// The same with ctx rounded to bf16 pairs, (T, H / 2) (the next product's input: no fp32 ctx
// written and read again): the same values as to_bf16_pairs of the fp32 ctx.
void self_attention(uint32_t* ctx_pairs, const uint16_t* qkv16, const size_t* offsets, size_t num_sequences,
                    size_t heads, size_t head_size, const RelativePositions& relative, AttentionPrecision precision);
// The AMX attention of one (sequence, head) of 64 from bf16 Q, K, V (attention/amx_head.h):
// ctx (L, 64) with row stride ldc (Out: float, or uint32_t for bf16 pairs).
template <class Out>
using AmxHeadFn = void (*)(Out* ctx, size_t ldc, const uint16_t* q, const uint16_t* k, const uint16_t* v, size_t ld,
                           size_t L, float scale);
// For tests: those two with `head` for every (sequence, head), one thread, head size 64: e.g. the
// AMX attention on the tiles' emulation that the tests build, on any CPU with AVX512-BF16.
void self_attention_amx_with(AmxHeadFn<float> head, float* ctx, const uint16_t* qkv16, const size_t* offsets,
                             size_t num_sequences, size_t heads);
void self_attention_amx_with(AmxHeadFn<uint32_t> head, uint32_t* ctx_pairs, const uint16_t* qkv16,
                             const size_t* offsets, size_t num_sequences, size_t heads);

// Whether the bf16 and int8 encoders ask for kBf16 attention on this CPU: the kernel plan's
// choice (runtime/plan.h). ROBERTA_ATTENTION=bf16 or fp32 decides when set. Unset: bf16 where the
// CPU has AMX tiles (and ROBERTA_ISA allows them), and where it has AVX512-BF16 and its CPU model's
// row says bf16 (where vdpbf16ps does more products per cycle than fp32 FMAs; elsewhere fp32
// attention is both faster and exact).
bool bf16_attention_pays();
// "bf16 (AVX512-BF16)", "bf16 (AMX tiles)" or "fp32 (...)" and why, for `roberta info`.
std::string attention_path();

}  // namespace roberta::kernels
