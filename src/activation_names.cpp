#include "activation_names.h"

#include <unordered_map>

#include "roberta/error.h"

namespace roberta {

kernels::Activation activation_from_name(const std::string& name) {
  using kernels::Activation;
  static const std::unordered_map<std::string, Activation> kNames = {
      {"gelu", Activation::kGelu},           {"gelu_python", Activation::kGelu},
      {"gelu_new", Activation::kGeluTanh},   {"gelu_pytorch_tanh", Activation::kGeluTanh},
      {"gelu_fast", Activation::kGeluTanh},  {"gelu_accurate", Activation::kGeluTanh},
      {"gelu_10", Activation::kGelu10},      {"quick_gelu", Activation::kQuickGelu},
      {"laplace", Activation::kLaplace},     {"relu", Activation::kRelu},
      {"relu2", Activation::kRelu2},         {"relu6", Activation::kRelu6},
      {"leaky_relu", Activation::kLeakyRelu}, {"silu", Activation::kSilu},
      {"swish", Activation::kSilu},          {"tanh", Activation::kTanh},
      {"sigmoid", Activation::kSigmoid},     {"mish", Activation::kMish},
      {"linear", Activation::kLinear},
  };
  const auto it = kNames.find(name);
  if (it == kNames.end()) throw Error("hidden_act \"" + name + "\" is not supported", ErrorKind::kInvalidModel);
  return it->second;
}

}  // namespace roberta
