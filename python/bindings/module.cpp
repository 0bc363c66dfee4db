// roberta_cpp._core: the C++ engine for the roberta_cpp package. The public Python API is in
// roberta_cpp/*.py; this module holds what runs in C++ (tokenizer, model, pipelines), each call
// releasing the GIL while it tokenizes or runs the model.
#include "common.h"
#include "roberta/error.h"
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
  register_tokenizer(m);
  register_model(m);
  register_pipelines(m);
  register_tasks(m);
}
