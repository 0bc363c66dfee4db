#include "roberta/runtime.h"

#include <string_view>
#include <utility>

#include "kernels/attention.h"
#include "kernels/onednn_gemm.h"
#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"
#include "roberta/model.h"
#include "runtime/plan.h"

namespace roberta {

namespace {

// "own (avx512, 12 x 32 blocks, prefetch next)", "oneDNN (avx512_core_bf16)", ...: what runs the
// products of precision p.
std::string product_path(kernels::Precision p) {
  using kernels::Precision;
  if (kernels::use_onednn(p))
    return "oneDNN (" + kernels::onednn_isa() +
           (kernels::onednn_isa() == "avx512_core_amx" && kernels::cpu_has_amx(p) ? ", AMX" : "") + ")";
  const std::string_view isa = kernels::packed_gemm_isa();
  if (p == Precision::kF32) {
    const std::string_view prefetch = kernels::packed_gemm_prefetch();
    return "own (" + std::string(isa) + ", " + std::to_string(kernels::packed_gemm_block_rows()) +
           (isa == "avx2" || isa == "neon" ? " x 16" : " x 32") + " blocks" +
           (prefetch == "none" ? "" : ", prefetch " + std::string(prefetch)) + ")";
  }
  if (p == Precision::kBF16)
    return std::string("own (") + kernels::bf16_kernel_name() + (isa == "portable" ? ", slow)" : ")");
  const std::string_view int8 = kernels::int8_kernel_name();
  return "own (" + std::string(int8) +
         (kernels::int8_kernel_fuses_epilogue() && int8 != "AMX-INT8" ? ", GELU and bf16 output in the epilogue" : "") +
         (kernels::int8_kernel_prefetches() ? ", prefetch next)" : ")");
}

}  // namespace

RuntimeInfo runtime_info() {
  const runtime::KernelPlan& plan = runtime::plan();
  RuntimeInfo r;
  r.cpu = runtime::describe(runtime::detect(), plan.row);
  r.isa = runtime::isa_name(plan.isa);
  if (plan.isa != plan.detected)
    r.isa += std::string(" (ROBERTA_ISA; the CPU has ") + runtime::isa_name(plan.detected) + ")";
  if (const std::string arm = runtime::arm_features_text(runtime::detect().arm); !arm.empty())
    r.isa += " (64-bit ARM with " + arm + ")";
  using kernels::Precision;
  for (const auto& [p, name] :
       {std::pair{Precision::kF32, "fp32"}, {Precision::kBF16, "bf16"}, {Precision::kInt8, "int8"}})
    r.matrix_products += (r.matrix_products.empty() ? "" : "; ") + std::string(name) + ": " + product_path(p);
  r.attention = kernels::attention_path();
  const bool arm = runtime::is_arm_level(plan.detected);
  r.default_dtype = recommended_weight_type() == WeightType::kBF16 ? "bf16 (this CPU multiplies bf16 natively)"
                    : arm ? "fp32 (64-bit ARM: bf16 is not the default until measured on ARM hardware)"
                          : "fp32 (no native bf16 products here, or ROBERTA_ISA below avx512bf16)";
  return r;
}

}  // namespace roberta
