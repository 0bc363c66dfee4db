#include "runtime/settings.h"

#include <cstdlib>
#include <string>

#include "roberta/error.h"

namespace roberta::runtime {

namespace {

constexpr SettingDoc kDocs[] = {
    {"ROBERTA_ISA",
     "amx, avx512bf16, avx512vnni, avx512, avxvnni, avx2, portable (x86-64); bf16, i8mm, dotprod, neon, portable "
     "(64-bit ARM)",
     "the best this CPU has",
     "caps the instruction set of every kernel, to run a lower path on a higher CPU"},
    {"ROBERTA_GEMM", "own, onednn", "each precision on the back end chosen for this CPU model",
     "runs every matrix product on our packed kernels or on oneDNN (where oneDNN can do the precision)"},
    {"ROBERTA_FP32_ROWS", "8, 12", "this CPU model's choice",
     "rows of the AVX-512 fp32 register blocks in products of more than 32 rows"},
    {"ROBERTA_PREFETCH", "next, ahead", "this CPU model's choice",
     "how the packed kernels prefetch weight panels: a k slice ahead per row chunk, or a fixed distance "
     "ahead per block"},
    {"ROBERTA_ATTENTION", "bf16, fp32", "bf16 where the CPU's bf16 dot product is faster than its fp32 FMAs",
     "the precision of attention's products for bf16 and int8 weights"},
};

const SettingDoc& doc(std::string_view name) {
  for (const SettingDoc& d : kDocs)
    if (name == d.name) return d;
  throw Error("internal: no setting named " + std::string(name));
}

[[noreturn]] void reject(const char* name, std::string_view value) {
  const SettingDoc& d = doc(name);
  throw Error(std::string(name) + "=\"" + std::string(value) + "\" is not one of " + d.values + " (unset: " + d.unset +
              (std::string_view(d.unset).starts_with("this CPU") ? ", which `roberta info` shows)" : ")"));
}

// The value of `name`, or "" when it is unset.
std::string_view value_of(const std::function<const char*(const char*)>& get, const char* name) {
  const char* v = get(name);
  return v ? v : "";
}

// true for `yes`, false for `no`, nothing for "", an error for anything else.
std::optional<bool> one_of_two(const std::function<const char*(const char*)>& get, const char* name,
                               std::string_view yes, std::string_view no) {
  const std::string_view v = value_of(get, name);
  if (v.empty()) return std::nullopt;
  if (v == yes) return true;
  if (v == no) return false;
  reject(name, v);
}

}  // namespace

std::span<const SettingDoc> setting_docs() { return kDocs; }

Isa parse_isa(std::string_view value) {
  for (Isa isa : {Isa::kAmx, Isa::kAvx512Bf16, Isa::kAvx512Vnni, Isa::kAvx512, Isa::kAvxVnni, Isa::kAvx2,
                  Isa::kArmBf16, Isa::kI8mm, Isa::kDotProd, Isa::kNeon, Isa::kPortable})
    if (value == isa_name(isa)) return isa;
  reject("ROBERTA_ISA", value);
}

Settings parse_settings(const std::function<const char*(const char*)>& get) {
  Settings s;
  if (const std::string_view isa = value_of(get, "ROBERTA_ISA"); !isa.empty()) s.isa = parse_isa(isa);
  if (const std::optional<bool> own = one_of_two(get, "ROBERTA_GEMM", "own", "onednn"))
    s.gemm = *own ? Settings::Gemm::kOwn : Settings::Gemm::kOneDnn;
  if (const std::optional<bool> eight = one_of_two(get, "ROBERTA_FP32_ROWS", "8", "12")) s.fp32_rows = *eight ? 8 : 12;
  s.prefetch_next = one_of_two(get, "ROBERTA_PREFETCH", "next", "ahead");
  s.bf16_attention = one_of_two(get, "ROBERTA_ATTENTION", "bf16", "fp32");
  return s;
}

Settings from_env() {
  return parse_settings([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

std::string hub_cache_dir(const std::function<const char*(const char*)>& get) {
  const auto var = [&](const char* name) { return std::string(value_of(get, name)); };
  if (std::string dir = var("HF_HUB_CACHE"); !dir.empty()) return dir;
  if (std::string dir = var("HUGGINGFACE_HUB_CACHE"); !dir.empty()) return dir;
  if (std::string home = var("HF_HOME"); !home.empty()) return home + "/hub";
  if (std::string xdg = var("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/huggingface/hub";
  return var("HOME") + "/.cache/huggingface/hub";
}

std::string hub_cache_dir() {
  return hub_cache_dir([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

}  // namespace roberta::runtime
