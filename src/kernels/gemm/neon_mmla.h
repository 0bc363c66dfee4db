#pragma once
// What the 2 x 2-tile kernels of 64-bit ARM share (smmla: int8_neon.cpp, bfmmla: bf16_neon.cpp):
// their operands gathered from the packed layouts, in 32-bit units (an int8 quad, a bf16 pair).
// Internal.
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstdint>

namespace roberta::kernels::mmla {

// Units q and q + 1 of rows r0 and r1 (pointers to unit q): [r0 q, r0 q+1, r1 q, r1 q+1], the left
// operand (two rows, row-major); with !two unit q only, q + 1 read as zeros.
inline uint32x4_t two_rows(const uint32_t* r0, const uint32_t* r1, bool two) {
  return two ? vcombine_u32(vld1_u32(r0), vld1_u32(r1)) : vcombine_u32(vcreate_u32(*r0), vcreate_u32(*r1));
}

// Columns j..j+3 of a panel's unit row q (at) and row q + 1 (next; null past the end: zeros),
// zipped into the right operands of columns j, j + 1 (cols01) and j + 2, j + 3 (cols23): each
// column's units q and q + 1 side by side.
inline void column_pairs(const uint32_t* at, const uint32_t* next, uint32x4_t& cols01, uint32x4_t& cols23) {
  const uint32x4_t lo = vld1q_u32(at), hi = next ? vld1q_u32(next) : vdupq_n_u32(0);
  cols01 = vzip1q_u32(lo, hi);
  cols23 = vzip2q_u32(lo, hi);
}

}  // namespace roberta::kernels::mmla
#endif
