#include "byte_level.h"

#include "unicode.h"

namespace roberta::byte_level {

static Tables make_tables() {
  Tables t;
  t.char_to_byte.fill(-1);
  char32_t next_extra = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    t.byte_to_char[b] = printable ? static_cast<char32_t>(b) : next_extra++;
    t.char_to_byte[t.byte_to_char[b]] = static_cast<int16_t>(b);
    unicode::append_utf8(t.byte_to_utf8[b], t.byte_to_char[b]);
  }
  return t;
}

const Tables& tables() {
  static const Tables t = make_tables();
  return t;
}

}  // namespace roberta::byte_level
