// roberta info: what a model folder holds.
#include <iomanip>
#include <iostream>

#include "common.h"

namespace roberta::cli {

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
            << "heads             " << (model.has_lm_head() ? "MLM head" : "no MLM head") << ", "
            << (model.has_pooler() ? "pooler" : "no pooler") << "\n"
            << "stored dtypes     " << model.dtype_summary() << "\n"
            << "weight memory     " << std::fixed << std::setprecision(1) << model.weight_bytes() / 1048576.0
            << " MiB (matrices repacked for the GEMM kernel, the rest used in place or converted to fp32)\n";
  for (const auto& f : model.files())
    std::cout << "file              " << f << " (" << std::filesystem::file_size(f) << " bytes)\n";
  try {
    const Tokenizer tok = Tokenizer::from_dir(dir);
    std::cout << "tokenizer         " << tok.vocab_size() << " ids, " << tok.added_tokens().size() << " added tokens"
              << (tok.mask_id() ? ", <mask> = " + std::to_string(*tok.mask_id()) : "") << "\n";
  } catch (const Error& e) {
    std::cout << "tokenizer         none (" << e.what() << ")\n";
  }
  return 0;
}

}  // namespace roberta::cli
