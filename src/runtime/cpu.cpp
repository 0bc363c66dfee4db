#include "runtime/cpu.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
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

const CpuId& detect_cpu() {
  static const CpuId id = [] {
    CpuId c;
#if defined(__x86_64__)
    unsigned a = 0, b = 0, cx = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &cx, &d)) return c;
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
#endif
    return c;
  }();
  return id;
}

CpuMatch choices_for(const CpuId& cpu) {
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
  static const CpuMatch match = choices_for(detect_cpu());
  return match;
}

std::string describe(const CpuId& cpu, const CpuMatch& match) {
  std::string out = cpu.brand.empty() ? "unknown CPU" : cpu.brand;
  if (!cpu.vendor.empty())
    out += " (" + cpu.vendor + " family " + std::to_string(cpu.family) + " model " + std::to_string(cpu.model) + ")";
  return out + ": " + (match.exact ? "" : "not in the table, the closest known: ") + match.choices->name;
}

}  // namespace roberta::runtime
