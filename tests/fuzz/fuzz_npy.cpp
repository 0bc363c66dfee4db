// libFuzzer target: the .npy reader.
#include <cstdint>
#include <string_view>

#include "roberta/error.h"
#include "roberta/dev/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto a = roberta::parse_npy(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
    if (a.dtype[1] == 'f')
      a.as_float();
    else
      a.as_int64();
  } catch (const roberta::Error&) {
  }
  return 0;
}
