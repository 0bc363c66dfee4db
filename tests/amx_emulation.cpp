#include "amx_emulation.h"

#include <stdexcept>

#if defined(__x86_64__)
#include "amx_emulated_tiles.h"
#include "kernels/attention.h"
#include "kernels/attention/amx_head.h"
#include "kernels/gemm/amx_blocks.h"
#endif

namespace roberta::kernels {

#if defined(__x86_64__)
namespace {
using amx::EmulatedTiles;
const AmxInt8Fn int8_block_emulated = amx_impl::int8_amx<EmulatedTiles>;
const AmxBf16Fn bf16_block_emulated = amx_impl::bf16_amx<EmulatedTiles>;
}  // namespace

void packed_linear_amx_emulated(float* y, size_t ldy, const float* x, const PackedWeightBf16& w, const float* bias,
                                size_t M, Activation act) {
  packed_linear_amx_with(bf16_block_emulated, y, ldy, x, w, bias, M, act);
}

void packed_linear_to_bf16_amx_emulated(uint32_t* out, size_t ldp, const Bf16Rows& x, const PackedWeightBf16& w,
                                        const float* bias, size_t M, Activation act, const ColumnGroups& groups) {
  packed_linear_to_bf16_amx_with(bf16_block_emulated, out, ldp, x, w, bias, M, act, groups);
}

void packed_linear_amx_emulated(float* y, size_t ldy, const QuantizedRows& x, const PackedWeightInt8& w,
                                const float* bias, size_t M, Activation act) {
  packed_linear_amx_with(int8_block_emulated, y, ldy, x, w, bias, M, act);
}

void packed_linear_to_bf16_amx_emulated(uint32_t* out, size_t ldp, const QuantizedRows& x, const PackedWeightInt8& w,
                                        const float* bias, size_t M, Activation act, const ColumnGroups& groups) {
  packed_linear_to_bf16_amx_with(int8_block_emulated, out, ldp, x, w, bias, M, act, groups);
}

void self_attention_amx_emulated(float* ctx, const float* qkv, const size_t* offsets, size_t num_sequences,
                                 size_t heads) {
  constexpr size_t kHead = attention_impl::kHead;
  const size_t H = heads * kHead, ld = 3 * H;
  for (size_t s = 0; s < num_sequences; ++s)
    for (size_t h = 0; h < heads; ++h) {
      const size_t begin = offsets[s], L = offsets[s + 1] - begin;
      if (L == 0) continue;
      const float* q = qkv + begin * ld + h * kHead;
      attention_impl::attention_head_amx<EmulatedTiles>(ctx + begin * H + h * kHead, H, q, q + H, q + 2 * H, ld, L,
                                                        0.125f);
    }
}

void self_attention_amx_emulated(float* ctx, const uint16_t* qkv16, const size_t* offsets, size_t num_sequences,
                                 size_t heads) {
  self_attention_amx_with(attention_impl::attention_head_amx<EmulatedTiles, uint16_t, float>, ctx, qkv16, offsets,
                          num_sequences, heads);
}

void self_attention_amx_emulated(uint32_t* ctx_pairs, const uint16_t* qkv16, const size_t* offsets,
                                 size_t num_sequences, size_t heads) {
  self_attention_amx_with(attention_impl::attention_head_amx<EmulatedTiles, uint16_t, uint32_t>, ctx_pairs, qkv16,
                          offsets, num_sequences, heads);
}
#else
// The emulation's blocks are written with AVX-512: elsewhere the tests that call these skip first
// (they ask for AVX-512 / AVX512-BF16), so reaching one is a test's bug.
namespace {
[[noreturn]] void x86_only() { throw std::logic_error("the AMX emulation runs on x86-64 with AVX-512 only"); }
}  // namespace

void packed_linear_amx_emulated(float*, size_t, const float*, const PackedWeightBf16&, const float*, size_t,
                                Activation) { x86_only(); }
void packed_linear_to_bf16_amx_emulated(uint32_t*, size_t, const Bf16Rows&, const PackedWeightBf16&, const float*,
                                        size_t, Activation, const ColumnGroups&) { x86_only(); }
void packed_linear_amx_emulated(float*, size_t, const QuantizedRows&, const PackedWeightInt8&, const float*, size_t,
                                Activation) { x86_only(); }
void packed_linear_to_bf16_amx_emulated(uint32_t*, size_t, const QuantizedRows&, const PackedWeightInt8&,
                                        const float*, size_t, Activation, const ColumnGroups&) { x86_only(); }
void self_attention_amx_emulated(float*, const float*, const size_t*, size_t, size_t) { x86_only(); }
void self_attention_amx_emulated(float*, const uint16_t*, const size_t*, size_t, size_t) { x86_only(); }
void self_attention_amx_emulated(uint32_t*, const uint16_t*, const size_t*, size_t, size_t) { x86_only(); }
#endif

}  // namespace roberta::kernels
