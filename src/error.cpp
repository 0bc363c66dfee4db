#include "roberta/error.h"

namespace roberta {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidInput: return "invalid input";
    case ErrorKind::kInvalidModel: return "invalid model";
    case ErrorKind::kIo: return "I/O";
  }
  return "?";
}

}  // namespace roberta
