// The int8 and bf16 products' AMX blocks on the hardware tiles (gemm/amx_blocks.h).
#include "kernels/amx_gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "kernels/gemm/amx_blocks.h"
#endif

namespace roberta::kernels {

#if defined(__x86_64__) && defined(__GNUC__)
const AmxInt8Fn int8_block_amx = amx_impl::int8_amx<amx::HardwareTiles>;
const AmxBf16Fn bf16_block_amx = amx_impl::bf16_amx<amx::HardwareTiles>;
#else
const AmxInt8Fn int8_block_amx = nullptr;
const AmxBf16Fn bf16_block_amx = nullptr;
#endif

}  // namespace roberta::kernels
