#pragma once
#include <cstddef>
#include <functional>
#include <string_view>

namespace roberta {

// Hashes std::string keys so that a std::string_view can look them up without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace roberta
