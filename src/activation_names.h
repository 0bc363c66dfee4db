#pragma once
// config.json's `hidden_act` names (Hugging Face's ACT2FN) mapped onto the kernels' activations.
//
//   roberta::activation_from_name("gelu_new") == kernels::Activation::kGeluTanh
#include <string>

#include "kernels/activation.h"

namespace roberta {

// Throws roberta::Error (kInvalidModel) for a name Hugging Face does not define, or `prelu`
// (which has weights).
kernels::Activation activation_from_name(const std::string& name);

}  // namespace roberta
