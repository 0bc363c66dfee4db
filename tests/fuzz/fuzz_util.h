#pragma once
// Helpers shared by the libFuzzer targets.
#include <string>
#include <vector>

namespace roberta::fuzz {

// `text` cut at every `at` (n separators give n + 1 pieces, empty ones kept).
inline std::vector<std::string> split(const std::string& text, char at) {
  std::vector<std::string> pieces(1);
  for (char c : text) {
    if (c == at)
      pieces.emplace_back();
    else
      pieces.back().push_back(c);
  }
  return pieces;
}

}  // namespace roberta::fuzz
