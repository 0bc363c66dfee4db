// The table of kernel choices per CPU model (src/runtime/cpu.h): which row each CPU gets.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "runtime/cpu.h"

namespace {

using roberta::runtime::choices_for;
using roberta::runtime::CpuFeatures;

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
#endif
  EXPECT_EQ(roberta::runtime::describe({"AuthenticAMD", 23, 49, "AMD Ryzen 9 3900X"},
                                       choices_for({"AuthenticAMD", 23, 49, ""})),
            "AMD Ryzen 9 3900X (AuthenticAMD family 23 model 49): not in the table, the closest known: AMD Zen 4 "
            "(family 25)");
}

}  // namespace
