#pragma once
// What runs here: the CPU, the instruction set the kernels use, which code runs each precision's
// matrix products and attention, and why. The same text `roberta info`, the server's `GET /info`
// ("runtime") and Python's `roberta_cpp.runtime_info()` show.
//
//   roberta::RuntimeInfo r = roberta::runtime_info();
//   r.cpu              // "<brand string> (<vendor> family F model M): <its row in runtime/cpu.h's table>"
//   r.matrix_products  // "fp32: own (avx512, 12 x 32 blocks, prefetch next); bf16: oneDNN (...); ..."
#include <string>

namespace roberta {

struct RuntimeInfo {
  std::string cpu;              // the processor, and the row of the kernel choices table it takes
  std::string isa;              // "avx512bf16", or "avx2 (ROBERTA_ISA; the CPU has avx512bf16)"; on ARM
                                // "portable (64-bit ARM with asimd dotprod ...)"
  std::string matrix_products;  // per precision: our kernels (ISA, blocks, prefetch) or oneDNN (ISA)
  std::string attention;        // for bf16 and int8 weights: bf16 or fp32, and why
  std::string default_dtype;    // "bf16" or "fp32": what --dtype auto picks, and why
};

// This process's. Throws roberta::Error for a bad ROBERTA_* setting.
RuntimeInfo runtime_info();

}  // namespace roberta
