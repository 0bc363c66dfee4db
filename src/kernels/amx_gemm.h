#pragma once
// Our own int8 and bf16 products on AMX tiles (CPUs with AMX-INT8 and AMX-BF16), internal to
// the kernels. They read the same packed weights as the AVX-512 kernels, whose panels are already
// what AMX's B tiles want: one k quad (int8) or k pair (bf16) per tile row, 16 output columns of 4
// bytes each per 64-byte row (int8 panels are 4 such column tiles wide, bf16 panels 2), loaded
// with the panel's row stride; x's rows (quantized quads, bf16 pairs) are the A tiles as they are.
//
// One call computes a chunk of rows x one panel x a k slice (the Int8BlockFn / bf16 BlockFn
// contract of gemm/int8_blocks.h / gemm/fp32_blocks.h), in blocks of 32 rows x 32 columns: 4
// accumulator tiles fed by 2 A tiles (16 rows each) and 2 B tiles (16 columns each) per 16 k
// units. The accumulators then go through a 32 x 32 staging buffer into the same epilogue as the
// AVX-512 kernels (int8: remove the 128 offset, dequantize; both: add y's earlier slices and the
// bias). Edges — fewer than 16 rows left, a k slice that is not a multiple of 16 units — are
// copied into zero-padded staging tiles, so no operand is read past its end.
//
// Status: on a CPU with AMX the hardware tiles give the emulation's int8 results exactly and bf16
// results within fp32 rounding of a float64 reference (tests skip the hardware half visibly
// elsewhere); the loop, the edges and the epilogues are tested on every AVX-512 machine through
// the emulated tiles (each instruction's semantics written out in C++, from Intel's SDM). Faster
// than oneDNN's AMX matmul in a forward pass, so the default on AMX CPUs (use_onednn;
// docs/performance.md#figures-behind-the-code).
#include <cstddef>
#include <cstdint>

namespace roberta::kernels {

// Rows the callers' row blocks are made of (for_each_block's block_rows): one A tile.
constexpr size_t kAmxBlockRows = 16;

// The int8 block (Int8BlockFn, and `gelu`): y[r][j] (+)= x_scale[r] · w_scale[j] · (sum over quads
// [q0, q1) of u8(x) · s8(w) - offset[j]) (+ bias), rows of x quads with stride ldq, panel of 64
// columns; then, if `gelu` (pass it with the last k slice), y = gelu(y) as activation_rows does
// it (gelu_avx512, avx512_math.h), while the values are in registers: no pass over y of its own.
// With y16 set, the values go there rounded to bf16 instead (row stride ldy; y unused): as for
// AmxBf16Fn below.
using AmxInt8Fn = void (*)(const uint32_t* xq, size_t ldq, size_t rows, const int8_t* panel, size_t q0, size_t q1,
                           const int32_t* offset, const float* x_scale, const float* w_scale, const float* bias,
                           bool first, float* y, size_t ldy, size_t cols, bool gelu, uint16_t* y16,
                           const void* next_panel);
// The bf16 block (gemm/fp32_blocks.h's BlockFn<uint32_t, uint16_t>, and `gelu` as above): y (+)= x
// pairs [q0, q1) · panel (32 columns). With y16 set, the block's values go there instead, rounded
// to bf16 (row stride ldy bf16 values; y unused): only for a product of one k slice (first), on a
// CPU with AVX512-BF16 (the rounding is to_bf16_pairs_avx512's).
using AmxBf16Fn = void (*)(const uint32_t* xb, size_t ldx_pairs, size_t rows, const uint16_t* panel, size_t q0,
                           size_t q1, const float* bias, bool first, float* y, size_t ldy, size_t cols, bool gelu,
                           uint16_t* y16, const void* next_panel);

// Both: next_panel (may be null), the panel the caller multiplies next; its k slice [q0, q1) is
// prefetched into L2 a few lines at a time during this call, so that the next call's first row
// block does not wait for the weights (docs/performance.md#figures-behind-the-code).
//
// On the tiles; only where usable_isa() >= Isa::kAmx.
extern const AmxInt8Fn int8_block_amx;
extern const AmxBf16Fn bf16_block_amx;
// (The tests build the same loops on tiles emulated in C++, gemm/amx_blocks.h, and run them
// through packed_linear_amx_with on any CPU with AVX-512.)

}  // namespace roberta::kernels
