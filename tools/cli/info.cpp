// roberta info: what a model folder holds.
#include <iomanip>
#include <iostream>

#include "common.h"
#include "kernels/attention.h"
#include "kernels/onednn_gemm.h"
#include "kernels/packed_gemm.h"
#include "kernels/packed_gemm_int8.h"
#include "runtime/cpu.h"

namespace roberta::cli {
namespace {

// "fp32: own (avx512, 12 x 32 blocks, prefetch next); bf16: oneDNN (avx512_core_bf16); int8: own (AVX512-VNNI,
// prefetch next)":
// which code runs the matrix products of each precision here (kernels::use_onednn, ROBERTA_GEMM,
// ROBERTA_ISA, ROBERTA_FP32_ROWS, ROBERTA_PREFETCH).
std::string gemm_paths() {
  using kernels::Precision;
  std::string out;
  for (const auto& [p, name] : {std::pair{Precision::kF32, "fp32"}, {Precision::kBF16, "bf16"}, {Precision::kInt8, "int8"}}) {
    std::string path;
    if (kernels::use_onednn(p))
      path = "oneDNN (" + kernels::onednn_isa() +
             (kernels::onednn_isa() == "avx512_core_amx" && kernels::cpu_has_amx(p) ? ", AMX" : "") + ")";
    else if (p == Precision::kF32)
      path = std::string("own (") + kernels::packed_gemm_isa() + ", " +
             std::to_string(kernels::packed_gemm_block_rows()) +
             (std::string_view(kernels::packed_gemm_isa()) == "avx2" ? " x 16" : " x 32") + " blocks" +
             (std::string_view(kernels::packed_gemm_prefetch()) == "none"
                  ? ""
                  : std::string(", prefetch ") + kernels::packed_gemm_prefetch()) +
             ")";
    else if (p == Precision::kBF16)
      path = std::string("own (") + kernels::bf16_kernel_name() +
             (std::string_view(kernels::packed_gemm_isa()) == "portable" ? ", slow)" : ")");
    else
      path = std::string("own (") + kernels::int8_kernel_name() +
             (kernels::int8_kernel_fuses_epilogue() && std::string_view(kernels::int8_kernel_name()) != "AMX-INT8"
                  ? ", GELU and bf16 output in the epilogue"
                  : "") +
             (kernels::int8_kernel_prefetches() ? ", prefetch next)" : ")");
    out += (out.empty() ? "" : "; ") + std::string(name) + ": " + path;
  }
  return out;
}

// "MLM head, pooler" ...: the heads the checkpoint has.
std::string heads(const Model& model) {
  static const std::pair<Head, const char*> kNames[] = {
      {Head::kMaskedLm, "MLM head"}, {Head::kPooler, "pooler"}, {Head::kSequenceClassification, "sequence classification"},
      {Head::kTokenClassification, "token classification"}, {Head::kQuestionAnswering, "question answering"}};
  std::string out;
  for (const auto& [head, name] : kNames)
    if (model.has_head(head)) out += (out.empty() ? "" : ", ") + std::string(name);
  return out.empty() ? "none (the encoder only)" : out;
}

}  // namespace

int run_info(const Args& args) {
  const std::filesystem::path dir = model_dir(args);
  const Model model = Model::load(dir);
  const ModelConfig& c = model.config();
  std::cout << "model folder      " << dir.string() << "\n"
            << "model type        " << c.model_type << "\n"
            << "layers            " << c.num_hidden_layers << "\n"
            << "hidden size       " << c.hidden_size << " (" << c.num_attention_heads << " heads of " << c.head_size()
            << ")\n"
            << "intermediate size " << c.intermediate_size << " (" << c.hidden_act << ")\n"
            << "vocabulary        " << c.vocab_size << "\n"
            << "max tokens        " << c.max_sequence_length() << " (max_position_embeddings "
            << c.max_position_embeddings << ")\n"
            << "parameters        " << model.parameter_count() << "\n"
            << "heads             " << heads(model) << "\n"
            << "stored dtypes     " << model.dtype_summary() << "\n"
            << "weight memory     " << std::fixed << std::setprecision(1) << model.weight_bytes() / 1048576.0
            << " MiB (matrices repacked for the GEMM kernel, the rest used in place or converted to fp32)\n";
  if (model.has_head(Head::kSequenceClassification) || model.has_head(Head::kTokenClassification)) {
    std::cout << "labels            ";
    for (size_t i = 0; i < c.id2label.size(); ++i) std::cout << (i ? ", " : "") << i << " " << c.id2label[i];
    std::cout << (c.problem_type.empty() ? "" : " (" + c.problem_type + ")") << "\n";
  }
  std::cout << "default dtype     "
            << (recommended_weight_type() == WeightType::kBF16 ? "bf16 (this CPU multiplies bf16 natively)"
                                                                : "fp32 (no native bf16 products here, or ROBERTA_ISA below avx512bf16)")
            << " for fill-mask, embed, the task commands and serve (--dtype auto)\n"
            << "cpu               " << runtime::describe(runtime::detect_cpu(), runtime::this_cpu()) << "\n"
            << "matrix products   " << gemm_paths() << "\n"
            << "attention         " << kernels::attention_path() << " for bf16 and int8 weights; fp32 for fp32\n";
  for (const auto& f : model.files())
    std::cout << "file              " << f << " (" << std::filesystem::file_size(f) << " bytes)\n";
  try {
    const Tokenizer tok = Tokenizer::from_dir(dir);
    const char* kind = tok.is_unigram()                             ? "SentencePiece (Unigram)"
                       : !tok.is_wordpiece()                        ? "byte-level BPE"
                       : tok.lowercases() && tok.strips_accents() ? "WordPiece (uncased: lowercase, accents stripped)"
                       : tok.lowercases()                         ? "WordPiece (uncased: lowercase, accents kept)"
                       : tok.strips_accents()                     ? "WordPiece (cased, accents stripped)"
                                                                  : "WordPiece (cased)";
    std::cout << "tokenizer         " << kind
              << ", " << tok.vocab_size() << " ids, " << tok.added_tokens().size() << " added tokens"
              << (tok.mask_id() ? ", " + tok.id_to_token(*tok.mask_id()) + " = " + std::to_string(*tok.mask_id()) : "")
              << "\n";
  } catch (const Error& e) {
    std::cout << "tokenizer         none (" << e.what() << ")\n";
  }
  return 0;
}

}  // namespace roberta::cli
