#pragma once
// The AVX512-BF16 blocks of the bf16 product (bf16_avx512.cpp), for its dispatch (bf16.cpp).
#include "kernels/gemm/built.h"
#if defined(ROBERTA_HAVE_BF16_KERNEL)
#include "kernels/gemm/fp32_blocks.h"

namespace roberta::kernels::gemm_impl {

// kMaxRows x 32 blocks prefetching by `prefetch` (one block alone: by kAhead).
BlockFn<uint32_t, uint16_t> bf16_blocks_avx512_fn(Prefetch prefetch);

}  // namespace roberta::kernels::gemm_impl
#endif
