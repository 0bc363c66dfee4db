// The table of kernel choices per CPU model (src/runtime/cpu.h): which row each CPU gets.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "runtime/cpu.h"

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#endif

namespace {

using roberta::runtime::choices_for;
using roberta::runtime::CpuFeatures;
using roberta::runtime::Isa;

std::string row(const CpuFeatures& cpu) { return choices_for(cpu).choices->name; }

TEST(CpuChoices, AmdByFamilyTheNearestFamilyWhereUnknown) {
  EXPECT_EQ(row({"AuthenticAMD", 25, 17, ""}), "AMD Zen 4 (family 25)");
  EXPECT_EQ(row({"AuthenticAMD", 25, 97, ""}), "AMD Zen 4 (family 25)");  // (client Zen 4)
  EXPECT_EQ(row({"AuthenticAMD", 26, 2, ""}), "AMD Zen 5 (family 26)");
  EXPECT_TRUE(choices_for({"AuthenticAMD", 26, 2, ""}).exact);
  // Zen 3 (25 too) and Zen 2 (23): the Zen 4's row; a later family: the Zen 5's, not exact.
  EXPECT_EQ(row({"AuthenticAMD", 23, 49, ""}), "AMD Zen 4 (family 25)");
  EXPECT_FALSE(choices_for({"AuthenticAMD", 23, 49, ""}).exact);
  EXPECT_EQ(row({"AuthenticAMD", 27, 0, ""}), "AMD Zen 5 (family 26)");
  EXPECT_FALSE(choices_for({"AuthenticAMD", 27, 0, ""}).exact);
}

TEST(CpuChoices, IntelByModel) {
  for (unsigned model : {143u, 207u, 173u, 174u}) {  // Sapphire, Emerald, Granite Rapids
    EXPECT_EQ(row({"GenuineIntel", 6, model, ""}), "Intel Xeon with AMX (Sapphire, Emerald, Granite Rapids)");
    EXPECT_TRUE(choices_for({"GenuineIntel", 6, model, ""}).exact) << model;
  }
  // Ice Lake SP, Alder Lake: the Xeon's row, as the closest known.
  for (unsigned model : {106u, 151u}) EXPECT_FALSE(choices_for({"GenuineIntel", 6, model, ""}).exact) << model;
  EXPECT_FALSE(choices_for({"", 0, 0, ""}).exact);  // no cpuid (another architecture)
}

TEST(CpuChoices, Zen4AndZen5DifferWhereTheirUnitsDo) {
  const auto* zen4 = choices_for({"AuthenticAMD", 25, 17, ""}).choices;
  const auto* zen5 = choices_for({"AuthenticAMD", 26, 2, ""}).choices;
  // Zen 4 splits 512-bit instructions in two 256-bit halves, Zen 5 runs them at full width.
  EXPECT_EQ(zen4->fp32_block_rows, 8u);
  EXPECT_FALSE(zen4->prefetch_next_slice);
  EXPECT_TRUE(zen5->prefetch_next_slice);
  std::set<std::string> names;
  for (const auto& c : roberta::runtime::cpu_choices_table()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
}

TEST(CpuChoices, DescribesThisCpu) {
  const CpuFeatures& cpu = roberta::runtime::detect();
  const std::string d = roberta::runtime::describe(cpu, roberta::runtime::this_cpu());
  std::printf("  %s\n", d.c_str());
  EXPECT_NE(d.find(roberta::runtime::this_cpu().choices->name), std::string::npos);
#if defined(__x86_64__)
  EXPECT_FALSE(cpu.vendor.empty());
  EXPECT_NE(d.find("family " + std::to_string(cpu.family)), std::string::npos);
#elif defined(__aarch64__)
  EXPECT_TRUE(cpu.arm.asimd);  // every AArch64 CPU Linux runs on
  EXPECT_EQ(roberta::runtime::this_cpu().choices->name, std::string("64-bit ARM (not measured)"));
#endif
  EXPECT_EQ(roberta::runtime::describe({"AuthenticAMD", 23, 49, "AMD Ryzen 9 3900X"},
                                       choices_for({"AuthenticAMD", 23, 49, ""})),
            "AMD Ryzen 9 3900X (AuthenticAMD family 23 model 49): not in the table, the closest known: AMD Zen 4 "
            "(family 25)");
}

// An ARM CPU takes the ARM row (measured on none yet), whoever made it.
TEST(CpuChoices, ArmCpusTakeTheArmRow) {
  CpuFeatures neoverse{"Arm", 0x41, 0xd0c, "Neoverse N1"};
  neoverse.arm.asimd = true;
  EXPECT_EQ(row(neoverse), "64-bit ARM (not measured)");
  EXPECT_EQ(roberta::runtime::describe(neoverse, choices_for(neoverse)),
            "Neoverse N1 (Arm part 0xd0c): 64-bit ARM (not measured)");
  CpuFeatures apple{"Apple", 0x61, 0x032, ""};
  apple.arm.asimd = true;
  EXPECT_EQ(row(apple), "64-bit ARM (not measured)");
}

// The extensions named from Linux's hardware-capability bits: on ARM against the kernel's own
// header (asm/hwcap.h); everywhere, that the names come out in order with the SVE length.
TEST(CpuChoices, ArmExtensionsFromLinuxHardwareCapabilities) {
  using roberta::runtime::arm_features_from_hwcaps;
  using roberta::runtime::arm_features_text;
#if defined(__aarch64__) && defined(__linux__)
  EXPECT_TRUE(arm_features_from_hwcaps(HWCAP_ASIMD, 0).asimd);
  EXPECT_TRUE(arm_features_from_hwcaps(HWCAP_ASIMDDP, 0).dotprod);
  EXPECT_TRUE(arm_features_from_hwcaps(HWCAP_SVE, 0).sve);
  EXPECT_TRUE(arm_features_from_hwcaps(0, HWCAP2_SVE2).sve2);
  EXPECT_TRUE(arm_features_from_hwcaps(0, HWCAP2_I8MM).i8mm);
  EXPECT_TRUE(arm_features_from_hwcaps(0, HWCAP2_BF16).bf16);
  EXPECT_EQ(arm_features_text(arm_features_from_hwcaps(HWCAP_ASIMD | HWCAP_FP | HWCAP_AES, HWCAP2_SVEAES)), "asimd");
#endif
  roberta::runtime::ArmFeatures a;
  EXPECT_EQ(arm_features_text(a), "");
  a.asimd = a.bf16 = a.sve = true;
  a.sve_bits = 256;
  EXPECT_EQ(arm_features_text(a), "asimd bf16 sve (SVE 256 bits)");
  const auto none = arm_features_from_hwcaps(0, 0);
  EXPECT_FALSE(none.asimd || none.dotprod || none.i8mm || none.bf16 || none.sve || none.sve2);
}

// The kernels' level from the extensions: each level needs the ones below it (a CPU with BF16 but
// no I8MM is a dotprod CPU), and SVE adds none. On ARM, this CPU's level is its extensions' level.
TEST(CpuChoices, ArmLevelFromTheExtensions) {
  using roberta::runtime::arm_level;
  roberta::runtime::ArmFeatures a;
  EXPECT_EQ(arm_level(a), Isa::kPortable);
  a.asimd = a.sve = true;
  EXPECT_EQ(arm_level(a), Isa::kNeon);
  a.bf16 = true;
  EXPECT_EQ(arm_level(a), Isa::kNeon);
  a.dotprod = true;
  EXPECT_EQ(arm_level(a), Isa::kDotProd);
  a.i8mm = true;
  EXPECT_EQ(arm_level(a), Isa::kArmBf16);
  a.bf16 = false;
  EXPECT_EQ(arm_level(a), Isa::kI8mm);
  for (Isa isa : {Isa::kNeon, Isa::kDotProd, Isa::kI8mm, Isa::kArmBf16}) {
    EXPECT_TRUE(roberta::runtime::is_arm_level(isa));
    EXPECT_LT(isa, Isa::kAvx2);  // the x86 kernels' tests (isa >= kAvx2) stay false on ARM
  }
  EXPECT_FALSE(roberta::runtime::is_arm_level(Isa::kPortable));
#if defined(__aarch64__)
  EXPECT_EQ(roberta::runtime::detect().isa, arm_level(roberta::runtime::detect().arm));
#endif
}

}  // namespace
