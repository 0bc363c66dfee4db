// Self-attention's dispatch: which kernel runs each (sequence, head), from the kernel plan and the
// shape. The kernels are in src/kernels/attention/, one file per instruction set.
#include "attention.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "amx_tiles.h"
#include "attention/blocks.h"
#include "isa.h"
#include "roberta/error.h"
#include "runtime/plan.h"
#include "util/thread_pool.h"

namespace roberta::kernels {

using namespace attention_impl;

bool bf16_attention_pays() { return runtime::plan().bf16_attention; }

std::string attention_path() {
  const runtime::KernelPlan& plan = runtime::plan();
  const bool forced = plan.settings.bf16_attention.has_value();
  if (plan.bf16_attention)
    return std::string(plan.isa >= Isa::kAmx ? "bf16 (AMX tiles" : "bf16 (AVX512-BF16") +
           (forced ? ", ROBERTA_ATTENTION)" : ", this CPU model's choice)");
  if (runtime::is_arm_level(plan.isa)) return "fp32 (NEON register blocks for heads of 64)";
  if (runtime::is_arm_level(plan.detected)) return "fp32 (OpenBLAS: ROBERTA_ISA=portable)";
  if (plan.isa < Isa::kAvx512Bf16) return "fp32 (no AVX512-BF16 here, or ROBERTA_ISA below avx512bf16)";
  return forced ? "fp32 (ROBERTA_ATTENTION)"
                : "fp32 (this CPU model's choice: its bf16 dot product is no faster than its fp32 FMAs)";
}

void self_attention(float* ctx, const float* qkv, const size_t* offsets, size_t num_sequences, size_t heads,
                    size_t head_size, const RelativePositions& relative, AttentionPrecision precision) {
  const size_t H = heads * head_size, ld = 3 * H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  // (the x86-64 kernels, the NEON one on 64-bit ARM; the general one for the other cases)
  [[maybe_unused]] const bool avx2 = !relative.distance && head_size == 64 && usable_isa() >= Isa::kAvx2;
  [[maybe_unused]] const bool fast = avx2 && usable_isa() >= Isa::kAvx512;
  [[maybe_unused]] const bool bf16 =
      fast && precision == AttentionPrecision::kBf16 && usable_isa() >= Isa::kAvx512Bf16;
  [[maybe_unused]] const bool tiles = bf16 && usable_isa() >= Isa::kAmx;
  [[maybe_unused]] const bool neon = !relative.distance && head_size == 64 && runtime::is_arm_level(usable_isa());
  ThreadPool::global()->parallel_for(num_sequences * heads, [&](size_t task) {
    const size_t s = task / heads, h = task % heads;
    const size_t begin = offsets[s], L = offsets[s + 1] - begin;
    if (L == 0) return;
    const float* q = qkv + begin * ld + h * head_size;
    float* out = ctx + begin * H + h * head_size;
#if defined(__x86_64__)
    if (tiles) return attention_head_amx<amx::HardwareTiles>(out, H, q, q + H, q + 2 * H, ld, L, scale);
    if (bf16) return attention_head_bf16(out, H, q, q + H, q + 2 * H, ld, L, scale);
    if (fast) return attention_head_avx512(out, H, q, q + H, q + 2 * H, ld, L, scale);
    if (avx2) return attention_head_avx2(out, H, q, q + H, q + 2 * H, ld, L, scale);
#endif
#if defined(__aarch64__)
    if (neon) return attention_head_neon(out, H, q, q + H, q + 2 * H, ld, L, scale);
#endif
    attention_impl::attention_head_general(out, H, q, q + H, q + 2 * H, ld, L, head_size, scale, relative);
  });
}

bool attention_takes_bf16(size_t head_size, const RelativePositions& relative, AttentionPrecision precision) {
  return precision == AttentionPrecision::kBf16 && head_size == kHead && !relative.distance &&
         usable_isa() >= Isa::kAmx;
}

namespace {
// ctx (fp32, or bf16 pairs) from head-by-head bf16 Q, K, V, each (sequence, head) by `head`.
template <class Out>
void attention_from_bf16(AmxHeadFn<Out> head, Out* ctx, const uint16_t* qkv16, const size_t* offsets,
                         size_t num_sequences, size_t heads, bool parallel) {
  const size_t H = heads * kHead, T = offsets[num_sequences], part = heads * T * kHead;
  constexpr size_t kPerValue = std::is_same_v<Out, uint32_t> ? 2 : 1;  // (values per element of ctx)
  const size_t ldc = H / kPerValue, per_head = kHead / kPerValue;
  const auto task = [&](size_t t) {
    const size_t s = t / heads, h = t % heads;
    const size_t begin = offsets[s], L = offsets[s + 1] - begin;
    if (L == 0) return;
    const uint16_t* q = qkv16 + (h * T + begin) * kHead;
    head(ctx + begin * ldc + h * per_head, ldc, q, q + part, q + 2 * part, kHead, L, 0.125f);
  };
  if (parallel)
    ThreadPool::global()->parallel_for(num_sequences * heads, task);
  else
    for (size_t t = 0; t < num_sequences * heads; ++t) task(t);
}

// The AMX attention on the hardware tiles, from bf16 Q, K, V into Out.
template <class Out>
AmxHeadFn<Out> hardware_head(size_t head_size, const RelativePositions& relative, AttentionPrecision precision) {
  if (!attention_takes_bf16(head_size, relative, precision))
    throw Error("self_attention: bf16 Q, K, V need the AMX attention (bf16 precision, heads of 64, absolute "
                "positions, a CPU with AMX; attention_takes_bf16)");
#if defined(__x86_64__)
  return attention_head_amx<amx::HardwareTiles, uint16_t, Out>;
#else
  throw Error("the AMX attention is x86-64 only");
#endif
}
}  // namespace

void self_attention(float* ctx, const uint16_t* qkv16, const size_t* offsets, size_t num_sequences, size_t heads,
                    size_t head_size, const RelativePositions& relative, AttentionPrecision precision) {
  attention_from_bf16(hardware_head<float>(head_size, relative, precision), ctx, qkv16, offsets, num_sequences, heads,
                      true);
}

void self_attention(uint32_t* ctx_pairs, const uint16_t* qkv16, const size_t* offsets, size_t num_sequences,
                    size_t heads, size_t head_size, const RelativePositions& relative, AttentionPrecision precision) {
  attention_from_bf16(hardware_head<uint32_t>(head_size, relative, precision), ctx_pairs, qkv16, offsets,
                      num_sequences, heads, true);
}

void self_attention_amx_with(AmxHeadFn<float> head, float* ctx, const uint16_t* qkv16, const size_t* offsets,
                             size_t num_sequences, size_t heads) {
  attention_from_bf16(head, ctx, qkv16, offsets, num_sequences, heads, false);
}

void self_attention_amx_with(AmxHeadFn<uint32_t> head, uint32_t* ctx_pairs, const uint16_t* qkv16,
                             const size_t* offsets, size_t num_sequences, size_t heads) {
  attention_from_bf16(head, ctx_pairs, qkv16, offsets, num_sequences, heads, false);
}

}  // namespace roberta::kernels
