#pragma once
// The one exception type of roberta.cpp. Its message names the file, field or position at fault.
#include <stdexcept>
#include <string>

namespace roberta {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace roberta
