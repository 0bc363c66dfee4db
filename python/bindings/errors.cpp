// roberta::Error as Python exceptions. Every error of the engine is a roberta_cpp.Error; its kind
// picks the subclass, which also derives from the built-in exception a Python caller expects:
//
//   ErrorKind::kInvalidInput  -> InvalidInputError(Error, ValueError)
//   ErrorKind::kInvalidModel  -> ModelError(Error)
//   ErrorKind::kIo            -> IoError(Error, OSError), or, when the path the message starts
//                                with does not exist or the message says "not found" / "no ... found",
//                                NotFoundError(IoError, FileNotFoundError)
//
// The message is the C++ one (it names the file, field, line or position).
#include <filesystem>

#include "common.h"
#include "roberta/error.h"

namespace roberta::python {
namespace {

PyObject* g_error = nullptr;
PyObject* g_invalid_input = nullptr;
PyObject* g_model = nullptr;
PyObject* g_io = nullptr;
PyObject* g_not_found = nullptr;

PyObject* new_exception(py::module_& m, const char* name, const char* doc, std::initializer_list<PyObject*> bases) {
  py::tuple t(bases.size());
  size_t i = 0;
  for (PyObject* b : bases) t[i++] = py::reinterpret_borrow<py::object>(b);
  const std::string qualified = std::string("roberta_cpp.") + name;
  PyObject* e = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, t.ptr(), nullptr);
  if (!e) throw py::error_already_set();
  m.add_object(name, py::reinterpret_borrow<py::object>(e));
  return e;
}

// Messages of I/O errors start with the path: "DIR/config.json: cannot open file".
bool names_missing_path(const std::string& message) {
  // "DIR: model folder not found", "DIR: no tokenizer found (...)"
  if (message.find("not found") != std::string::npos) return true;
  if (message.find(": no ") != std::string::npos && message.find(" found") != std::string::npos) return true;
  const auto colon = message.find(": ");
  if (colon == std::string::npos || colon == 0) return false;
  std::error_code ec;
  return !std::filesystem::exists(std::filesystem::path(message.substr(0, colon)), ec);
}

}  // namespace

void register_errors(py::module_& m) {
  g_error = new_exception(m, "Error", "Base class of every roberta.cpp error (a C++ roberta::Error).", {PyExc_Exception});
  g_invalid_input = new_exception(
      m, "InvalidInputError", "The text, ids or options are invalid (ErrorKind::kInvalidInput); also a ValueError.",
      {g_error, PyExc_ValueError});
  g_model = new_exception(
      m, "ModelError",
      "The model folder's config, weights or tokenizer files are wrong or unsupported (ErrorKind::kInvalidModel).",
      {g_error});
  g_io = new_exception(m, "IoError", "A file could not be opened, read or written (ErrorKind::kIo); also an OSError.",
                       {g_error, PyExc_OSError});
  g_not_found = new_exception(m, "NotFoundError",
                              "An I/O error whose file or folder does not exist; also a FileNotFoundError.",
                              {g_io, PyExc_FileNotFoundError});
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      PyObject* type = g_error;
      switch (e.kind()) {
        case ErrorKind::kInvalidInput: type = g_invalid_input; break;
        case ErrorKind::kInvalidModel: type = g_model; break;
        case ErrorKind::kIo: type = names_missing_path(e.what()) ? g_not_found : g_io; break;
      }
      // A message with invalid UTF-8 (a path's bytes) keeps its text, the bad bytes replaced
      // (PyErr_SetString would fail on it and leave the exception without a message).
      const std::string message = e.what();
      PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "replace");
      if (!text) return;  // (the decoding error is then the exception set)
      PyErr_SetObject(type, text);
      Py_DECREF(text);
    }
  });
}

}  // namespace roberta::python
