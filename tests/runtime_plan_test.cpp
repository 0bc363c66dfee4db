// The ROBERTA_* settings (src/runtime/settings.h) and the kernel plan made from them and the CPU
// (src/runtime/plan.h): each variable's accepted values and errors, and the plan's rule for CPUs
// this machine is not (built from their features, not detected).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "roberta/error.h"
#include "runtime/plan.h"
#include "runtime/settings.h"
#include "test_util.h"

namespace {

using roberta::runtime::CpuFeatures;
using roberta::runtime::Isa;
using roberta::runtime::KernelPlan;
using roberta::runtime::resolve;
using roberta::runtime::Settings;

Settings parse(const std::map<std::string, std::string>& env) {
  return roberta::runtime::parse_settings([&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(Settings, UnsetOrEmptyLeavesEveryChoiceToTheCpu) {
  for (const auto& env : {std::map<std::string, std::string>{},
                          {{"ROBERTA_ISA", ""}, {"ROBERTA_GEMM", ""}, {"ROBERTA_FP32_ROWS", ""},
                           {"ROBERTA_PREFETCH", ""}, {"ROBERTA_ATTENTION", ""}}}) {
    const Settings s = parse(env);
    EXPECT_FALSE(s.isa);
    EXPECT_EQ(s.gemm, Settings::Gemm::kDefault);
    EXPECT_EQ(s.fp32_rows, 0u);
    EXPECT_FALSE(s.prefetch_next);
    EXPECT_FALSE(s.bf16_attention);
  }
}

TEST(Settings, EachAcceptedValueIsRead) {
  const Settings a = parse({{"ROBERTA_ISA", "avx2"}, {"ROBERTA_GEMM", "onednn"}, {"ROBERTA_FP32_ROWS", "8"},
                            {"ROBERTA_PREFETCH", "ahead"}, {"ROBERTA_ATTENTION", "fp32"}});
  EXPECT_EQ(a.isa, Isa::kAvx2);
  EXPECT_EQ(a.gemm, Settings::Gemm::kOneDnn);
  EXPECT_EQ(a.fp32_rows, 8u);
  EXPECT_EQ(a.prefetch_next, false);
  EXPECT_EQ(a.bf16_attention, false);
  const Settings b = parse({{"ROBERTA_ISA", "amx"}, {"ROBERTA_GEMM", "own"}, {"ROBERTA_FP32_ROWS", "12"},
                            {"ROBERTA_PREFETCH", "next"}, {"ROBERTA_ATTENTION", "bf16"}});
  EXPECT_EQ(b.isa, Isa::kAmx);
  EXPECT_EQ(b.gemm, Settings::Gemm::kOwn);
  EXPECT_EQ(b.fp32_rows, 12u);
  EXPECT_EQ(b.prefetch_next, true);
  EXPECT_EQ(b.bf16_attention, true);
}

// A typo is an error naming the variable, the value and every accepted value, never a silent default.
TEST(Settings, AnotherValueIsAnErrorNamingTheAcceptedOnes) {
  const std::map<std::string, std::pair<std::string, std::set<std::string>>> cases = {
      {"ROBERTA_ISA",
       {"avx1024", {"amx", "avx512bf16", "avx512vnni", "avx512", "avxvnni", "avx2", "portable", "bf16", "i8mm",
                    "dotprod", "neon"}}},
      {"ROBERTA_GEMM", {"fastest", {"own", "onednn"}}},
      {"ROBERTA_FP32_ROWS", {"16", {"8", "12"}}},
      {"ROBERTA_PREFETCH", {"sideways", {"next", "ahead"}}},
      {"ROBERTA_ATTENTION", {"BF16", {"bf16", "fp32"}}}};
  for (const auto& [name, bad] : cases) {
    std::vector<std::string> parts = {name, "\"" + bad.first + "\""};
    parts.insert(parts.end(), bad.second.begin(), bad.second.end());
    try {
      parse({{name, bad.first}});
      ADD_FAILURE() << name << "=" << bad.first << " was accepted";
    } catch (const roberta::Error& e) {
      for (const std::string& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  }
  // Every variable has a row in the table docs/environment.md is made from, and only those.
  std::set<std::string> documented;
  for (const auto& d : roberta::runtime::setting_docs()) documented.insert(d.name);
  EXPECT_EQ(documented.size(), cases.size());
  for (const auto& [name, bad] : cases) EXPECT_TRUE(documented.count(name)) << name;
}

// docs/environment.md's table of kernel settings is this table: a row per variable with its values,
// what unset means and what it does, word for word.
TEST(Settings, TheDocsTableIsTheSettingsTable) {
  const auto path = std::filesystem::path(ROBERTA_DEMO_MODEL).parent_path().parent_path() / "docs" / "environment.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  size_t rows = 0;
  for (const auto& d : roberta::runtime::setting_docs()) {
    const std::string row = std::string("| `") + d.name + "` | " + d.values + " | " + d.unset + " | " + d.effect + " |";
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/environment.md lacks the row\n" << row;
    ++rows;
  }
  // and no other ROBERTA_ variable in that section than those
  const size_t begin = doc.find("## Kernel settings"), end = doc.find("\n## ", begin + 1);
  ASSERT_NE(begin, std::string::npos);
  const std::string section = doc.substr(begin, end - begin);
  size_t listed = 0;
  for (size_t at = section.find("\n| `ROBERTA_"); at != std::string::npos; at = section.find("\n| `ROBERTA_", at + 1))
    ++listed;
  EXPECT_EQ(listed, rows);
}

TEST(Settings, FromEnvReadsThisProcesssEnvironment) {
  const Settings env = roberta::runtime::from_env();
  const Settings plan = roberta::runtime::plan().settings;
  EXPECT_EQ(env.isa, plan.isa);
  EXPECT_EQ(env.gemm, plan.gemm);
  EXPECT_EQ(env.fp32_rows, plan.fp32_rows);
  const char* isa = std::getenv("ROBERTA_ISA");
  EXPECT_EQ(env.isa.has_value(), isa && *isa);
}

// Features of CPUs by their cpuid identity and instruction sets.
CpuFeatures zen4() { return {"AuthenticAMD", 25, 17, "", Isa::kAvx512Bf16, false, false, false}; }
CpuFeatures zen5() { return {"AuthenticAMD", 26, 2, "", Isa::kAvx512Bf16, true, false, false}; }
CpuFeatures sapphire_rapids() { return {"GenuineIntel", 6, 143, "", Isa::kAmx, true, true, true}; }
CpuFeatures ice_lake() { return {"GenuineIntel", 6, 106, "", Isa::kAvx512Vnni, false, false, false}; }
CpuFeatures alder_lake() { return {"GenuineIntel", 6, 151, "", Isa::kAvxVnni, true, false, false}; }

TEST(KernelPlan, EachCpuModelGetsItsRowsChoices) {
  const KernelPlan z4 = resolve(zen4(), {}), z5 = resolve(zen5(), {}), spr = resolve(sapphire_rapids(), {});
  EXPECT_EQ(z4.isa, Isa::kAvx512Bf16);
  EXPECT_EQ(z4.fp32_block_rows, 8u);
  EXPECT_FALSE(z4.prefetch_next);
  EXPECT_TRUE(z4.bf16_attention);
  EXPECT_TRUE(z4.bf16_onednn);
  EXPECT_FALSE(z4.int8_fused_epilogue);
  EXPECT_FALSE(z4.avx_vnni);
  EXPECT_EQ(z5.fp32_block_rows, 12u);
  EXPECT_TRUE(z5.prefetch_next);
  EXPECT_TRUE(z5.int8_fused_epilogue);
  EXPECT_TRUE(z5.avx_vnni);
  // The Xeon's row says fp32 attention, but on AMX tiles attention is bf16.
  EXPECT_FALSE(spr.row.choices->bf16_attention);
  EXPECT_EQ(spr.isa, Isa::kAmx);
  EXPECT_TRUE(spr.bf16_attention);
  EXPECT_TRUE(spr.amx_bf16 && spr.amx_int8);
  // Below AVX512-BF16 attention stays fp32 and nothing is fused, whatever the row.
  for (const CpuFeatures& cpu : {ice_lake(), alder_lake()}) {
    const KernelPlan p = resolve(cpu, {});
    EXPECT_FALSE(p.bf16_attention);
    EXPECT_FALSE(p.int8_fused_epilogue);
  }
  EXPECT_TRUE(resolve(alder_lake(), {}).avx_vnni);
  EXPECT_FALSE(resolve(ice_lake(), {}).avx_vnni);
}

TEST(KernelPlan, SettingsOverrideTheRowAndTheIsaCapsTheCpu) {
  const KernelPlan rows = resolve(zen4(), parse({{"ROBERTA_FP32_ROWS", "12"}, {"ROBERTA_PREFETCH", "next"}}));
  EXPECT_EQ(rows.fp32_block_rows, 12u);
  EXPECT_TRUE(rows.prefetch_next);
  const KernelPlan fp32 = resolve(sapphire_rapids(), parse({{"ROBERTA_ATTENTION", "fp32"}}));
  EXPECT_FALSE(fp32.bf16_attention);
  // bf16 attention asked for where the CPU cannot: fp32.
  EXPECT_FALSE(resolve(ice_lake(), parse({{"ROBERTA_ATTENTION", "bf16"}})).bf16_attention);
  // A cap: at most the CPU's level; under it no oneDNN default, no bf16 attention, no fused epilogue.
  const KernelPlan capped = resolve(zen5(), parse({{"ROBERTA_ISA", "avx2"}}));
  EXPECT_EQ(capped.isa, Isa::kAvx2);
  EXPECT_EQ(capped.detected, Isa::kAvx512Bf16);
  EXPECT_FALSE(capped.avx_vnni);
  EXPECT_FALSE(capped.bf16_onednn);
  EXPECT_FALSE(capped.bf16_attention);
  EXPECT_FALSE(capped.int8_fused_epilogue);
  EXPECT_TRUE(resolve(zen5(), parse({{"ROBERTA_ISA", "avxvnni"}})).avx_vnni);
  EXPECT_EQ(resolve(alder_lake(), parse({{"ROBERTA_ISA", "amx"}})).isa, Isa::kAvxVnni);
  EXPECT_EQ(resolve(zen5(), parse({{"ROBERTA_GEMM", "own"}})).gemm, Settings::Gemm::kOwn);
}

CpuFeatures graviton3() {
  CpuFeatures c{"Arm", 0x41, 0xd40, "Neoverse V1", Isa::kArmBf16};
  c.arm.asimd = c.arm.dotprod = c.arm.i8mm = c.arm.bf16 = c.arm.sve = true;
  return c;
}

// On ARM the cap works within ARM's levels; a level of the other architecture is an error naming
// this one's levels (not a silent cap to the portable kernels, or no cap at all).
TEST(KernelPlan, RobertaIsaOfTheOtherArchitectureIsAnError) {
  EXPECT_EQ(resolve(graviton3(), {}).isa, Isa::kArmBf16);
  EXPECT_EQ(resolve(graviton3(), parse({{"ROBERTA_ISA", "dotprod"}})).isa, Isa::kDotProd);
  EXPECT_EQ(resolve(graviton3(), parse({{"ROBERTA_ISA", "portable"}})).isa, Isa::kPortable);
  EXPECT_FALSE(resolve(graviton3(), {}).bf16_attention);
  const auto error_of = [](const CpuFeatures& cpu, const char* isa) {
    try {
      resolve(cpu, parse({{"ROBERTA_ISA", isa}}));
    } catch (const roberta::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string on_arm = error_of(graviton3(), "avx2");
  EXPECT_NE(on_arm.find("ROBERTA_ISA=\"avx2\" is a level of x86-64"), std::string::npos) << on_arm;
  EXPECT_NE(on_arm.find("bf16, i8mm, dotprod, neon, portable"), std::string::npos) << on_arm;
  const std::string on_x86 = error_of(zen5(), "neon");
  EXPECT_NE(on_x86.find("ROBERTA_ISA=\"neon\" is a level of 64-bit ARM"), std::string::npos) << on_x86;
  EXPECT_NE(on_x86.find("avx2, portable"), std::string::npos) << on_x86;
}

}  // namespace
