#pragma once
// The element-wise activations the kernels can apply (Hugging Face's ACT2FN functions, grouped
// by what they compute). The engine maps config.json's `hidden_act` names onto these
// (src/activation_names.h); the kernels know nothing of configs.
namespace roberta::kernels {

enum class Activation {
  kGelu,        // gelu, gelu_python: x * Phi(x) with erf
  kGeluTanh,    // gelu_new, gelu_pytorch_tanh, gelu_fast, gelu_accurate
  kGelu10,      // gelu_10: erf GELU clipped to [-10, 10]
  kQuickGelu,   // quick_gelu: x * sigmoid(1.702 x)
  kLaplace,     // laplace
  kRelu,
  kRelu2,       // relu(x)^2
  kRelu6,
  kLeakyRelu,   // slope 0.01
  kSilu,        // silu, swish
  kTanh,
  kSigmoid,
  kMish,
  kLinear,
};

}  // namespace roberta::kernels
