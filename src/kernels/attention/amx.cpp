// The bf16 attention on AMX's hardware tiles (attention/amx_head.h).
#include "kernels/attention/amx_head.h"

#if defined(__x86_64__)
namespace roberta::kernels::attention_impl {

template void attention_head_amx<amx::HardwareTiles, float, float>(float*, size_t, const float*, const float*,
                                                                  const float*, size_t, size_t, float);
template void attention_head_amx<amx::HardwareTiles, uint16_t, float>(float*, size_t, const uint16_t*, const uint16_t*,
                                                                     const uint16_t*, size_t, size_t, float);
template void attention_head_amx<amx::HardwareTiles, uint16_t, uint32_t>(uint32_t*, size_t, const uint16_t*,
                                                                        const uint16_t*, const uint16_t*, size_t,
                                                                        size_t, float);

}  // namespace roberta::kernels::attention_impl
#endif
