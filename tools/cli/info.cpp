// roberta info: what a model folder holds.
#include <iomanip>
#include <iostream>

#include "common.h"
#include "roberta/runtime.h"

namespace roberta::cli {
namespace {

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
  const RuntimeInfo r = runtime_info();
  std::cout << "default dtype     " << r.default_dtype << " for fill-mask, embed, the task commands and serve (--dtype auto)\n"
            << "cpu               " << r.cpu << "\n"
            << "instruction set   " << r.isa << "\n"
            << "matrix products   " << r.matrix_products << "\n"
            << "attention         " << r.attention << " for bf16 and int8 weights; fp32 for fp32\n";
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
