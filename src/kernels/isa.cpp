#include "isa.h"

#include <cstdlib>
#include <string>

#include "roberta/error.h"

namespace roberta::kernels {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kPortable: return "portable";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx512Bf16: return "avx512bf16";
  }
  return "?";
}

Isa parse_isa(std::string_view value) {
  for (Isa isa : {Isa::kAvx512Bf16, Isa::kAvx512, Isa::kAvx2, Isa::kPortable})
    if (value == isa_name(isa)) return isa;
  throw Error("ROBERTA_ISA=\"" + std::string(value) +
              "\" is not one of avx512bf16, avx512, avx2, portable (unset: the best this CPU has)");
}

Isa detected_isa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
    if (__builtin_cpu_supports("avx512bf16")) return Isa::kAvx512Bf16;
    return Isa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
#endif
  return Isa::kPortable;
}

Isa usable_isa() {
  const Isa cpu = detected_isa();
  const char* env = std::getenv("ROBERTA_ISA");
  if (!env || !*env) return cpu;
  const Isa cap = parse_isa(env);
  return cap < cpu ? cap : cpu;
}

}  // namespace roberta::kernels
