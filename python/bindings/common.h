#pragma once
// Shared pieces of the roberta_cpp._core bindings: numpy arrays that take over a C++ buffer, the
// registration functions of each part, and option parsing shared by several parts.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "roberta/error.h"
#include "roberta/model.h"

namespace roberta::python {

namespace py = pybind11;

// A numpy array of `shape` that owns `data`: the vector is moved into the array's capsule, so the
// result is handed over without a copy. Call with the GIL held.
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& data, std::vector<py::ssize_t> shape) {
  if (data.empty()) return py::array_t<T>(shape);
  auto* owned = new std::vector<T>(std::move(data));
  py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(shape, owned->data(), owner);
}

// A Matrix (rows, cols) as a (rows, cols) float32 array, without a copy.
inline py::array_t<float> to_numpy(Matrix&& m) {
  const auto rows = static_cast<py::ssize_t>(m.rows), cols = static_cast<py::ssize_t>(m.cols);
  return to_numpy(std::move(m.data), {rows, cols});
}

// Errors of one of several inputs name it, counting from 1 as Error::about_input does
// ("input 3: no <mask> in the text"); the error of a call's only input does not.
template <class F>
auto for_input(size_t i, size_t n, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    if (n == 1) throw Error(e.detail(), e.kind());
    throw Error(e.detail(), e.kind()).about_input(i);
  }
}

// The values of a run_batched call's results, or the first failed input's error, worded as
// for_input words it.
template <class T>
std::vector<T> values_or_first_error(std::vector<Result<T>>&& results) {
  std::vector<T> out;
  out.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) for_input(i, results.size(), [&]() -> T { throw *results[i].error; });
    out.push_back(std::move(*results[i].value));
  }
  return out;
}

// "float32"/"fp32", "bfloat16"/"bf16", "int8" (the CLI's --dtype); ValueError otherwise.
LoadOptions parse_dtype(const std::string& dtype);

void register_errors(py::module_& m);
void register_tokenizer(py::module_& m);
void register_model(py::module_& m);
void register_pipelines(py::module_& m);
void register_tasks(py::module_& m);

}  // namespace roberta::python
