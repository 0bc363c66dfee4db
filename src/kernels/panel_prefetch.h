#pragma once
// How the packed GEMMs' register blocks ask for their weights ahead of use (software prefetch),
// shared by the fp32 / bf16 kernels (gemm/fp32_*.cpp, gemm/bf16_avx512.cpp) and the int8 ones below AMX
// (gemm/int8_*.cpp). Internal to the kernels; x86 only.
#if defined(__x86_64__)
#include <cassert>
#include <cstddef>

#include "intrinsics.h"
#include "runtime/plan.h"

namespace roberta::kernels {

// kNextSlice: the register blocks of a row chunk ask, together, for the panel's next k slice while
// they compute (NextSlicePrefetch). kAhead: the fp32 and bf16 blocks each ask for the panel rows a
// fixed distance ahead, and the int8 kernels below AMX leave their weights to the hardware
// prefetcher.
enum class Prefetch { kAhead, kNextSlice };

// The choice here: the kernel plan's (the CPU model's, or ROBERTA_PREFETCH's).
inline Prefetch panel_prefetch() { return runtime::plan().prefetch_next ? Prefetch::kNextSlice : Prefetch::kAhead; }

// The share of part `part` of a chunk's `parts` (register blocks, or the column passes of each) in
// asking for the panel's rows after k1 in memory: the next k slice, or the next panel, which follows
// it. A panel row is Lines cache lines; the rows [k0, k1) the chunk multiplies by now, k1 - k0 rows
// to ask for, spread evenly over all the parts, one line at a time (asking for each line once:
// repeated requests slow the product down; docs/performance.md#figures-behind-the-code), so that
// the weights stream from memory while every block computes. Into L2 (T1): the parts that follow
// read them again from there.
template <size_t Lines>
class NextSlicePrefetch {
 public:
  __attribute__((always_inline)) NextSlicePrefetch(const void* panel, size_t k0, size_t k1, size_t part, size_t parts)
      : next_(static_cast<const char*>(panel) + k1 * Lines * 64 + Lines * part * (k1 - k0) / parts * 64),
        rest_(Lines * part * (k1 - k0) % parts),
        parts_(parts) {}

  // Called once per panel row the part multiplies by: Lines lines of all the parts' steps together.
  // With Lines <= 2 at most one line a step, which keeps up only where parts >= Lines (the fp32 and
  // bf16 walkers give one register block the fixed distance instead; AVX2's two passes are two parts).
  // (Checked here, not on construction: PanelPrefetch builds one for a single block with kAhead too,
  // and never steps it.)
  __attribute__((always_inline)) void step() {
    assert(Lines > 2 || parts_ >= Lines);
    rest_ += Lines;
    if constexpr (Lines <= 2) {
      if (rest_ >= parts_) ask();
    } else {
      while (rest_ >= parts_) ask();
    }
  }

 private:
  __attribute__((always_inline)) void ask() {
    _mm_prefetch(next_, _MM_HINT_T1);
    next_ += 64;
    rest_ -= parts_;
  }

  const char* next_;
  size_t rest_, parts_;
};

}  // namespace roberta::kernels
#endif
