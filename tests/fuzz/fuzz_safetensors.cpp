// libFuzzer target: safetensors header and data layout. Any input must parse or throw
// roberta::Error; every tensor of a parsed file must be readable.
#include <cstdint>
#include <vector>

#include "roberta/dev/weights.h"
#include "roberta/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto store = roberta::WeightStore::from_bytes("fuzz.safetensors", std::vector<uint8_t>(data, data + size));
    for (const auto& [name, t] : store.tensors()) {
      if (t.nbytes > size) __builtin_trap();  // a tensor can never be larger than the file
      try {
        store.to_float(t);
      } catch (const roberta::Error&) {
      }
    }
  } catch (const roberta::Error&) {
  }
  return 0;
}
