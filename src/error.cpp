#include "roberta/error.h"

#include <iostream>
#include <mutex>

namespace roberta {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidInput: return "invalid input";
    case ErrorKind::kInvalidModel: return "invalid model";
    case ErrorKind::kIo: return "I/O";
  }
  return "?";
}

namespace {
std::mutex warning_mutex;
WarningHandler& warning_handler() {
  static WarningHandler handler = [](const std::string& message) {
    std::cerr << ("warning: " + message + "\n");  // one write: lines of threads warning at once stay whole
  };
  return handler;
}
}  // namespace

void set_warning_handler(WarningHandler handler) {
  std::lock_guard lock(warning_mutex);
  warning_handler() = std::move(handler);
}

void warn(const std::string& message) {
  WarningHandler handler;
  {
    std::lock_guard lock(warning_mutex);
    handler = warning_handler();
  }
  if (handler) handler(message);  // outside the lock: a handler may take locks of its own (Python's GIL)
}

}  // namespace roberta
