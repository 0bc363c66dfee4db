#pragma once
// The one exception type of roberta.cpp. Its message names the file, field or position at fault;
// its kind tells a caller (the server, the Python package) what went wrong without parsing the
// message:
//
//   try { model.forward(batch); }
//   catch (const roberta::Error& e) {
//     if (e.kind() == roberta::ErrorKind::kInvalidInput) ... // 4xx / ValueError
//   }
//
// Warnings: what the library accepts, as transformers does, though a user may not expect it (a
// checkpoint with more layers than config.json's num_hidden_layers: the extra ones go unused).
// Each goes to the process's warning handler, by default a line "warning: MESSAGE" on stderr;
// set_warning_handler replaces it (an empty function drops warnings). The handler may be called
// from any thread, and from several at once:
//
//   roberta::set_warning_handler([](const std::string& m) { std::clog << "roberta: " << m << "\n"; });
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

namespace roberta {

enum class ErrorKind {
  kInvalidInput,  // the text, ids, options or request: the caller can fix it
  kInvalidModel,  // the model folder's config, weights or tokenizer files are wrong or unsupported
  kIo,            // a file could not be opened, read or written
};

const char* error_kind_name(ErrorKind kind);  // "invalid input", "invalid model", "I/O"

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ErrorKind kind = ErrorKind::kInvalidInput)
      : std::runtime_error(message), kind_(kind), detail_(message) {}
  ErrorKind kind() const { return kind_; }

  // The same error about input `index` (counted from 0) of a call given several inputs: what()
  // says "input <index + 1>: <detail>"; a front end can word it its own way from input() and
  // detail() ("line 7: ...").
  Error about_input(size_t index) const {
    Error e("input " + std::to_string(index + 1) + ": " + detail_, kind_);
    e.detail_ = detail_;
    e.input_ = index;
    return e;
  }
  std::optional<size_t> input() const { return input_; }
  const std::string& detail() const { return detail_; }  // what() without the input

 private:
  ErrorKind kind_;
  std::string detail_;
  std::optional<size_t> input_{};
};

// One input's answer, or the Error about that input alone, from a pipeline's run_batched: the
// other inputs of the call still get theirs.
template <class T>
struct Result {
  std::optional<T> value{};
  std::optional<Error> error{};
  bool ok() const { return value.has_value(); }
};

using WarningHandler = std::function<void(const std::string& message)>;
void set_warning_handler(WarningHandler handler);
void warn(const std::string& message);  // calls the handler

}  // namespace roberta
