// libFuzzer target: config.json parsing and validation.
#include <cstdint>
#include <string>

#include "roberta/config.h"
#include "roberta/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto c = roberta::ModelConfig::from_json_text(std::string(reinterpret_cast<const char*>(data), size), "config.json");
    if (c.hidden_size % c.num_attention_heads != 0 || c.hidden_size <= 0) __builtin_trap();
  } catch (const roberta::Error&) {
  }
  return 0;
}
