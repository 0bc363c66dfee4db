#pragma once
#include <cstddef>

namespace roberta::kernels {

// Multi-head scaled dot-product self-attention over packed sequences (no padding anywhere).
// qkv is (T, 3H): the Q, K and V projections side by side; ctx is (T, H).
// Sequence s holds tokens [offsets[s], offsets[s+1]) and attends only to itself.
// Per sequence and head: P = softmax(Q Kᵀ / sqrt(d)), ctx = P V.
void self_attention(float* ctx, const float* qkv, const size_t* offsets, size_t num_sequences, size_t heads,
                    size_t head_size);

}  // namespace roberta::kernels
