#pragma once
// GPT-2's reversible byte <-> printable code point map: bytes 33-126, 161-172 and 174-255 map to
// themselves, the other 68 bytes to U+0100.. in order (so the space 0x20 becomes U+0120 'Ġ').
#include <array>
#include <cstdint>
#include <string>

namespace roberta::byte_level {

struct Tables {
  std::array<char32_t, 256> byte_to_char{};
  std::array<int16_t, 324> char_to_byte{};  // code points < 324; -1 if not a byte-level char
  std::array<std::string, 256> byte_to_utf8;  // byte_to_char as UTF-8
};

const Tables& tables();

// The byte a byte-level character stands for, or -1.
inline int char_to_byte(char32_t cp) {
  return cp < 324 ? tables().char_to_byte[cp] : -1;
}

}  // namespace roberta::byte_level
