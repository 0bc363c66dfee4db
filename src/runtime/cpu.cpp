#include "runtime/cpu.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__linux__) && defined(__aarch64__)
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif

namespace roberta::runtime {

namespace {

// The table. Each entry was measured on that CPU (docs/performance.md); change one only with a
// measurement on its CPU.
constexpr CpuChoices kZen4{"AMD Zen 4 (family 25)", 8, false, true, true, false};
constexpr CpuChoices kZen5{"AMD Zen 5 (family 26)", 12, true, true, true, true};
constexpr CpuChoices kXeonAmx{"Intel Xeon with AMX (Sapphire, Emerald, Granite Rapids)", 12, true, true, false, false};
// No ARM CPU has been measured: the x86 fields do not apply there (the kernels are portable).
constexpr CpuChoices kArm{"64-bit ARM (not measured)", 8, false, false, false, false};
constexpr CpuChoices kTable[] = {kZen4, kZen5, kXeonAmx, kArm};

}  // namespace

std::span<const CpuChoices> cpu_choices_table() { return kTable; }

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kPortable: return "portable";
    case Isa::kNeon: return "neon";
    case Isa::kDotProd: return "dotprod";
    case Isa::kI8mm: return "i8mm";
    case Isa::kArmBf16: return "bf16";
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

#if defined(__aarch64__)
// MIDR_EL1's implementer codes and, for Arm Ltd's cores, the part numbers of the server and
// desktop cores (the Arm Architecture Reference Manual's and Linux's arch/arm64 cputype.h lists).
const char* arm_implementer(unsigned code) {
  switch (code) {
    case 0x41: return "Arm";
    case 0x42: return "Broadcom";
    case 0x43: return "Cavium";
    case 0x46: return "Fujitsu";
    case 0x48: return "HiSilicon";
    case 0x4e: return "NVIDIA";
    case 0x51: return "Qualcomm";
    case 0x61: return "Apple";
    case 0xc0: return "Ampere";
  }
  return "";
}

const char* arm_core(unsigned implementer, unsigned part) {
  if (implementer == 0x46 && part == 0x001) return "A64FX";
  if (implementer != 0x41) return "";
  switch (part) {
    case 0xd03: return "Cortex-A53";
    case 0xd07: return "Cortex-A57";
    case 0xd08: return "Cortex-A72";
    case 0xd0b: return "Cortex-A76";
    case 0xd0c: return "Neoverse N1";
    case 0xd40: return "Neoverse V1";
    case 0xd49: return "Neoverse N2";
    case 0xd4f: return "Neoverse V2";
    case 0xd83: return "Neoverse V3AE";
    case 0xd84: return "Neoverse V3";
    case 0xd8e: return "Neoverse N3";
  }
  return "";
}

void read_arm(CpuFeatures& c) {
#if defined(__linux__)
  const unsigned long hwcap = getauxval(AT_HWCAP);
  c.arm = arm_features_from_hwcaps(hwcap, getauxval(AT_HWCAP2));
  if (c.arm.sve) c.arm.sve_bits = 8 * static_cast<unsigned>(prctl(PR_SVE_GET_VL) & PR_SVE_VL_LEN_MASK);
  c.isa = arm_level(c.arm);
  if (hwcap & (1ul << 11)) {  // HWCAP_CPUID: Linux lets user space read the ID registers
    uint64_t midr = 0;
    asm("mrs %0, MIDR_EL1" : "=r"(midr));
    c.family = static_cast<unsigned>((midr >> 24) & 0xff);
    c.model = static_cast<unsigned>((midr >> 4) & 0xfff);
    c.vendor = arm_implementer(c.family);
    if (c.vendor.empty()) c.vendor = "ARM implementer " + std::to_string(c.family);
    c.brand = arm_core(c.family, c.model);
  }
#else
  (void)c;
#endif
}
#endif

}  // namespace

ArmFeatures arm_features_from_hwcaps(unsigned long hwcap, unsigned long hwcap2) {
  const auto bit = [](unsigned long word, unsigned n) { return ((word >> n) & 1ul) != 0; };
  ArmFeatures a;
  a.asimd = bit(hwcap, 1);     // HWCAP_ASIMD
  a.dotprod = bit(hwcap, 20);  // HWCAP_ASIMDDP
  a.sve = bit(hwcap, 22);      // HWCAP_SVE
  a.sve2 = bit(hwcap2, 1);     // HWCAP2_SVE2
  a.i8mm = bit(hwcap2, 13);    // HWCAP2_I8MM
  a.bf16 = bit(hwcap2, 14);    // HWCAP2_BF16
  return a;
}

Isa arm_level(const ArmFeatures& a) {
  if (!a.asimd) return Isa::kPortable;
  if (!a.dotprod) return Isa::kNeon;
  if (!a.i8mm) return Isa::kDotProd;
  return a.bf16 ? Isa::kArmBf16 : Isa::kI8mm;
}

std::string arm_features_text(const ArmFeatures& arm) {
  std::string out;
  for (const auto& [on, name] : {std::pair{arm.asimd, "asimd"}, {arm.dotprod, "dotprod"}, {arm.i8mm, "i8mm"},
                                 {arm.bf16, "bf16"}, {arm.sve, "sve"}, {arm.sve2, "sve2"}})
    if (on) out += (out.empty() ? "" : " ") + std::string(name);
  if (arm.sve_bits) out += " (SVE " + std::to_string(arm.sve_bits) + " bits)";
  return out;
}

const CpuFeatures& detect() {
  static const CpuFeatures features = [] {
    CpuFeatures c;
#if defined(__x86_64__)
    read_identity(c);
    read_features(c);
#elif defined(__aarch64__)
    read_arm(c);
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
  if (cpu.arm.asimd) return {&kArm, true};
  return {&kXeonAmx, false};
}

const CpuMatch& this_cpu() {
  static const CpuMatch match = choices_for(detect());
  return match;
}

std::string describe(const CpuFeatures& cpu, const CpuMatch& match) {
  std::string out = cpu.brand.empty() ? "unknown CPU" : cpu.brand;
  if (cpu.arm.asimd && !cpu.vendor.empty()) {
    char part[8];
    std::snprintf(part, sizeof part, "0x%03x", cpu.model);
    out += " (" + cpu.vendor + " part " + part + ")";
  } else if (!cpu.vendor.empty()) {
    out += " (" + cpu.vendor + " family " + std::to_string(cpu.family) + " model " + std::to_string(cpu.model) + ")";
  }
  return out + ": " + (match.exact ? "" : "not in the table, the closest known: ") + match.choices->name;
}

}  // namespace roberta::runtime
