#include "isa.h"

#include <cstdlib>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "roberta/error.h"

namespace roberta::kernels {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kPortable: return "portable";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvxVnni: return "avxvnni";
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx512Vnni: return "avx512vnni";
    case Isa::kAvx512Bf16: return "avx512bf16";
    case Isa::kAmx: return "amx";
  }
  return "?";
}

Isa parse_isa(std::string_view value) {
  for (Isa isa : {Isa::kAmx, Isa::kAvx512Bf16, Isa::kAvx512Vnni, Isa::kAvx512, Isa::kAvxVnni, Isa::kAvx2,
                  Isa::kPortable})
    if (value == isa_name(isa)) return isa;
  throw Error("ROBERTA_ISA=\"" + std::string(value) +
              "\" is not one of amx, avx512bf16, avx512vnni, avx512, avxvnni, avx2, portable (unset: the best this "
              "CPU has)");
}

bool amx_tiles_granted() {
  static const bool granted = [] {
#if defined(__linux__) && defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool tile = d & (1u << 24), int8 = d & (1u << 25), bf16 = d & (1u << 22);
    if (!tile || !int8 || !bf16) return false;
    constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
    unsigned long features = 0;
    if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &features) != 0) return false;
    return ((features >> kXfeatureXtiledata) & 1) != 0;
#else
    return false;
#endif
  }();
  return granted;
}

bool cpu_has_avx_vnni() {
  static const bool has = [] {
#if defined(__x86_64__)
    unsigned max_subleaf, a, b, c, d;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__get_cpuid_count(7, 0, &max_subleaf, &b, &c, &d) || max_subleaf < 1)
      return false;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4)) != 0;
#else
    return false;
#endif
  }();
  return has;
}

Isa detected_isa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
    if (!__builtin_cpu_supports("avx512vnni")) return Isa::kAvx512;
    if (__builtin_cpu_supports("avx512bf16")) return amx_tiles_granted() ? Isa::kAmx : Isa::kAvx512Bf16;
    return Isa::kAvx512Vnni;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return cpu_has_avx_vnni() ? Isa::kAvxVnni : Isa::kAvx2;
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

bool avx_vnni_usable() { return usable_isa() >= Isa::kAvxVnni && cpu_has_avx_vnni(); }

}  // namespace roberta::kernels
