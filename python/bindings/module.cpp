// roberta_cpp._core: the C++ engine for the roberta_cpp package. The public Python API is in
// roberta_cpp/*.py; this module holds what runs in C++ (tokenizer, model, pipelines), each call
// releasing the GIL while it tokenizes or runs the model.
#include <cstdio>

#include "common.h"
#include "roberta/error.h"
#include "roberta/hub.h"
#include "roberta/runtime.h"
#include "roberta/threads.h"

namespace roberta::python {

LoadOptions parse_dtype(const std::string& dtype) {
  LoadOptions o;
  if (dtype == "auto")
    o.weights = recommended_weight_type();
  else if (dtype == "float32" || dtype == "fp32")
    o.weights = WeightType::kF32;
  else if (dtype == "bfloat16" || dtype == "bf16")
    o.weights = WeightType::kBF16;
  else if (dtype == "int8")
    o.weights = WeightType::kInt8;
  else
    throw Error("dtype \"" + dtype + "\" is not one of float32, bfloat16, int8, auto");
  return o;
}

}  // namespace roberta::python

PYBIND11_MODULE(_core, m) {
  namespace py = pybind11;
  using namespace roberta::python;
  m.doc() = "roberta.cpp's C++ engine (tokenizer, model, pipelines) for the roberta_cpp package.";
  m.attr("__version__") = ROBERTA_VERSION;
  register_errors(m);
  m.def(
      "set_num_threads", [](unsigned n) { roberta::set_num_threads(n); }, py::arg("n"),
      "Threads the engine uses for every later model call in this process (0: all cores). Like\n"
      "torch.set_num_threads, this is process-wide; calls already running finish on their threads.");
  m.def(
      "num_threads", [] { return roberta::num_threads(); },
      "The number of threads model calls started now use.");
  m.def("resolve_model", &roberta::resolve_model, py::arg("name_or_path"), py::arg("revision") = "",
        py::arg("cache_dir") = "",
        "name_or_path when it exists, else the snapshot folder of a Hugging Face Hub id ('org/name',\n"
        "'org/name@revision') in the local Hugging Face cache (roberta::resolve_model).");
  m.def(
      "runtime_info",
      [] {
        const roberta::RuntimeInfo r = roberta::runtime_info();
        py::dict d;
        d["cpu"] = r.cpu, d["isa"] = r.isa, d["matrix_products"] = r.matrix_products;
        d["attention"] = r.attention, d["default_dtype"] = r.default_dtype;
        return d;
      },
      "What runs here, as `roberta info` shows it: the CPU and its row of the kernel choices table,\n"
      "the instruction set, the code running each precision's matrix products, attention, and the\n"
      "precision dtype='auto' picks. A dict of strings: cpu, isa, matrix_products, attention,\n"
      "default_dtype.");
  // The library's warnings go to Python's logging ("roberta_cpp" logger), as transformers logs its
  // own; a warning after the interpreter has gone (at exit) goes to stderr.
  roberta::set_warning_handler([](const std::string& message) {
    if (!Py_IsInitialized()) {
      std::fprintf(stderr, "warning: %s\n", message.c_str());
      return;
    }
    py::gil_scoped_acquire gil;
    try {
      py::module_::import("logging").attr("getLogger")("roberta_cpp").attr("warning")(message);
    } catch (const py::error_already_set&) {
      std::fprintf(stderr, "warning: %s\n", message.c_str());
    }
  });
  register_tokenizer(m);
  register_model(m);
  register_pipelines(m);
  register_tasks(m);
}
