#include "runtime/cpu.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace roberta::runtime {

namespace {

// The table. Each entry was measured on that CPU (docs/performance.md); change one only with a
// measurement on its CPU.
constexpr CpuChoices kZen4{"AMD Zen 4 (family 25)", 8, false, true, true, false};
constexpr CpuChoices kZen5{"AMD Zen 5 (family 26)", 12, true, true, true, true};
constexpr CpuChoices kXeonAmx{"Intel Xeon with AMX (Sapphire, Emerald, Granite Rapids)", 12, true, true, false, false};
constexpr CpuChoices kTable[] = {kZen4, kZen5, kXeonAmx};

}  // namespace

std::span<const CpuChoices> cpu_choices_table() { return kTable; }

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

namespace {

#if defined(__x86_64__)
// Vendor, family, model and the processor's name string.
void read_identity(CpuFeatures& c) {
  unsigned a = 0, b = 0, cx = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &cx, &d)) return;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4), std::memcpy(vendor + 4, &d, 4), std::memcpy(vendor + 8, &cx, 4);
  c.vendor = vendor;
  if (__get_cpuid(1, &a, &b, &cx, &d)) {
    const unsigned base_family = (a >> 8) & 0xF, base_model = (a >> 4) & 0xF;
    c.family = base_family == 0xF ? base_family + ((a >> 20) & 0xFF) : base_family;
    c.model = base_family == 0x6 || base_family == 0xF ? base_model | (((a >> 16) & 0xF) << 4) : base_model;
  }
  unsigned top = 0;
  if (__get_cpuid(0x80000000, &top, &b, &cx, &d) && top >= 0x80000004) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      unsigned r[4];
      __get_cpuid(0x80000002 + leaf, &r[0], &r[1], &r[2], &r[3]);
      std::memcpy(brand + 16 * leaf, r, 16);
    }
    c.brand = brand;
    c.brand.erase(0, c.brand.find_first_not_of(' '));
    c.brand.erase(c.brand.find_last_not_of(' ') + 1);
  }
}

// Whether Linux lets this process use the AMX tiles: asks for them (once per process).
bool amx_tiles_granted() {
#if defined(__linux__)
  constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  unsigned long features = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &features) != 0) return false;
  return ((features >> kXfeatureXtiledata) & 1) != 0;
#else
  return false;
#endif
}

// The instruction sets: the level, AVX-VNNI and the AMX tiles.
void read_features(CpuFeatures& c) {
  __builtin_cpu_init();
  unsigned max_subleaf = 0, a = 0, b = 0, cx = 0, d = 0;
  const bool leaf7 = __get_cpuid_count(7, 0, &max_subleaf, &b, &cx, &d);
  const bool tile = leaf7 && (d & (1u << 24));
  c.amx_bf16 = tile && (d & (1u << 22));
  c.amx_int8 = tile && (d & (1u << 25));
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  c.avx_vnni = avx2 && leaf7 && max_subleaf >= 1 && __get_cpuid_count(7, 1, &a, &b, &cx, &d) && (a & (1u << 4));
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
    if (!__builtin_cpu_supports("avx512vnni"))
      c.isa = Isa::kAvx512;
    else if (!__builtin_cpu_supports("avx512bf16"))
      c.isa = Isa::kAvx512Vnni;
    else
      c.isa = c.amx_bf16 && c.amx_int8 && amx_tiles_granted() ? Isa::kAmx : Isa::kAvx512Bf16;
  } else if (avx2) {
    c.isa = c.avx_vnni ? Isa::kAvxVnni : Isa::kAvx2;
  }
}
#endif

}  // namespace

const CpuFeatures& detect() {
  static const CpuFeatures features = [] {
    CpuFeatures c;
#if defined(__x86_64__)
    read_identity(c);
    read_features(c);
#endif
    return c;
  }();
  return features;
}

CpuMatch choices_for(const CpuFeatures& cpu) {
  if (cpu.vendor == "AuthenticAMD") {
    if (cpu.family == 25) return {&kZen4, true};
    if (cpu.family == 26) return {&kZen5, true};
    return {cpu.family < 25 ? &kZen4 : &kZen5, false};
  }
  if (cpu.vendor == "GenuineIntel" && cpu.family == 6) {
    constexpr unsigned kAmxXeons[] = {143, 207, 173, 174};
    return {&kXeonAmx, std::find(std::begin(kAmxXeons), std::end(kAmxXeons), cpu.model) != std::end(kAmxXeons)};
  }
  return {&kXeonAmx, false};
}

const CpuMatch& this_cpu() {
  static const CpuMatch match = choices_for(detect());
  return match;
}

std::string describe(const CpuFeatures& cpu, const CpuMatch& match) {
  std::string out = cpu.brand.empty() ? "unknown CPU" : cpu.brand;
  if (!cpu.vendor.empty())
    out += " (" + cpu.vendor + " family " + std::to_string(cpu.family) + " model " + std::to_string(cpu.model) + ")";
  return out + ": " + (match.exact ? "" : "not in the table, the closest known: ") + match.choices->name;
}

}  // namespace roberta::runtime
