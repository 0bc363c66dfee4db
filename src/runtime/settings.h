#pragma once
// The ROBERTA_* environment variables that steer the kernels, parsed in one place (and, at the
// end, where Hugging Face's hub cache is). Each one
// overrides a choice the kernel plan (runtime/plan.h) would otherwise make from the CPU; unset or
// empty means "let the CPU decide". A value that is not accepted is an error naming the variable and
// the accepted values, raised when the plan is first made (Model::load, or the first kernel call).
//
//   Settings s = runtime::from_env();                     // the process's, as the plan reads them
//   Settings t = runtime::parse_settings(lookup);          // tests: from any name -> value function
//   Settings u; u.gemm = Settings::Gemm::kOwn;             // or built directly
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "runtime/isa.h"

namespace roberta::runtime {

struct Settings {
  enum class Gemm { kDefault, kOwn, kOneDnn };
  std::optional<Isa> isa;              // ROBERTA_ISA: the highest level the kernels may use
  Gemm gemm = Gemm::kDefault;          // ROBERTA_GEMM: own | onednn for every product
  size_t fp32_rows = 0;                // ROBERTA_FP32_ROWS: 8 | 12 rows per AVX-512 fp32 block; 0: unset
  std::optional<bool> prefetch_next;   // ROBERTA_PREFETCH: next (true) | ahead (false)
  std::optional<bool> bf16_attention;  // ROBERTA_ATTENTION: bf16 (true) | fp32 (false)
};

// One row per variable, for `roberta --help`-style listings and docs/environment.md.
struct SettingDoc {
  const char* name;    // "ROBERTA_ISA"
  const char* values;  // "amx, avx512bf16, ..."
  const char* unset;   // what happens when it is not set
  const char* effect;  // what it changes
};
std::span<const SettingDoc> setting_docs();

// The level a ROBERTA_ISA value names; throws roberta::Error naming the accepted ones.
Isa parse_isa(std::string_view value);
// The settings as `get(name)` gives them (nullptr or "" for unset). Throws roberta::Error.
Settings parse_settings(const std::function<const char*(const char*)>& get);
// The settings of this process's environment (read at each call; the plan reads them once).
Settings from_env();

// The Hugging Face hub cache folder, found as huggingface_hub finds it: HF_HUB_CACHE, else
// HUGGINGFACE_HUB_CACHE (its older name), else HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
// else $HOME/.cache/huggingface/hub. From `get` (tests) or this process's environment.
std::string hub_cache_dir(const std::function<const char*(const char*)>& get);
std::string hub_cache_dir();

}  // namespace roberta::runtime
