#pragma once
// The AMX kernels on emulated tiles (amx_emulated_tiles.h), through the library's loops: the
// products (packed_linear_amx_with) and the attention (self_attention_amx_with); on any CPU with
// AVX-512 (bf16 output and attention: AVX512-BF16). Where the CPU has AMX, the tests compare them
// with the hardware tiles. Elsewhere (ARM) they throw: the tests that call them skip before.
#include <cstddef>
#include <cstdint>

#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"

namespace roberta::kernels {

// The bf16 product (x rounded to bf16 by this CPU's conversion), and written as bf16 pairs.
void packed_linear_amx_emulated(float* y, size_t ldy, const float* x, const PackedWeightBf16& w, const float* bias,
                                size_t M, Activation act = Activation::kLinear);
void packed_linear_to_bf16_amx_emulated(uint32_t* out, size_t ldp, const Bf16Rows& x, const PackedWeightBf16& w,
                                        const float* bias, size_t M, Activation act, const ColumnGroups& groups = {});
// The int8 product, and written as bf16 pairs.
void packed_linear_amx_emulated(float* y, size_t ldy, const QuantizedRows& x, const PackedWeightInt8& w,
                                const float* bias, size_t M, Activation act = Activation::kLinear);
void packed_linear_to_bf16_amx_emulated(uint32_t* out, size_t ldp, const QuantizedRows& x, const PackedWeightInt8& w,
                                        const float* bias, size_t M, Activation act, const ColumnGroups& groups = {});

// kBf16 attention with heads of 64 (self_attention's), one thread: from fp32 Q, K, V (qkv (T, 3H)),
// and from bf16 Q, K, V head by head (self_attention's qkv16) into fp32 or bf16 pairs.
void self_attention_amx_emulated(float* ctx, const float* qkv, const size_t* offsets, size_t num_sequences,
                                 size_t heads);
void self_attention_amx_emulated(float* ctx, const uint16_t* qkv16, const size_t* offsets, size_t num_sequences,
                                 size_t heads);
void self_attention_amx_emulated(uint32_t* ctx_pairs, const uint16_t* qkv16, const size_t* offsets,
                                 size_t num_sequences, size_t heads);

}  // namespace roberta::kernels
