// roberta::Model for Python: load, config, heads, and forward on padded (B, L) numpy ids, with the
// outputs scattered back to (B, L, ...) with zeros at padding. The GIL is released for the forward
// pass; output buffers are moved into the numpy arrays.
#include <cstring>

#include "common.h"
#include "roberta/error.h"

namespace roberta::python {
namespace {

Head parse_head(const std::string& name) {
  if (name == "masked_lm") return Head::kMaskedLm;
  if (name == "pooler") return Head::kPooler;
  if (name == "sequence_classification") return Head::kSequenceClassification;
  if (name == "token_classification") return Head::kTokenClassification;
  if (name == "question_answering") return Head::kQuestionAnswering;
  throw Error("head \"" + name +
              "\" is not one of masked_lm, pooler, sequence_classification, token_classification, question_answering");
}

using IdArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

struct Padded {
  size_t B = 0, L = 0;
  std::vector<int64_t> ids, mask, type_ids;
};

std::string at(size_t i, size_t L) { return "[" + std::to_string(i / L) + ", " + std::to_string(i % L) + "]"; }

std::vector<int64_t> read_2d(const IdArray& a, const char* name, size_t B, size_t L) {
  if (a.ndim() != 2 || static_cast<size_t>(a.shape(0)) != B || static_cast<size_t>(a.shape(1)) != L)
    throw Error(std::string(name) + " must have the shape of input_ids (" + std::to_string(B) + ", " +
                std::to_string(L) + ")");
  return std::vector<int64_t>(a.data(), a.data() + a.size());
}

// What forward computes: the flags of ForwardOptions, by output name.
struct Wanted {
  bool hidden_states = false, logits = false, pooler = false, sequence = false, token = false, span = false;
};

py::dict forward(const Model& model, const IdArray& ids_in, std::optional<IdArray> mask_in,
                 std::optional<IdArray> types_in, const Wanted& want) {
  if (ids_in.ndim() != 2) throw Error("input_ids must be a 2-D (batch, length) array");
  Padded in;
  in.B = static_cast<size_t>(ids_in.shape(0));
  in.L = static_cast<size_t>(ids_in.shape(1));
  in.ids.assign(ids_in.data(), ids_in.data() + ids_in.size());
  if (mask_in) in.mask = read_2d(*mask_in, "attention_mask", in.B, in.L);
  if (types_in) in.type_ids = read_2d(*types_in, "token_type_ids", in.B, in.L);
  const ModelConfig& cfg = model.config();
  const size_t H = static_cast<size_t>(cfg.hidden_size);

  Outputs out;
  std::vector<size_t> where;  // flat (b * L + l) of each packed token
  {
    py::gil_scoped_release nogil;
    const int64_t pad = cfg.pad_token_id;
    for (size_t i = 0; i < in.ids.size(); ++i)
      if (in.ids[i] < 0 || in.ids[i] >= cfg.vocab_size)
        throw Error("input_ids" + at(i, in.L) + " = " + std::to_string(in.ids[i]) + " is outside [0, vocab_size = " +
                    std::to_string(cfg.vocab_size) + ")");
    if (in.mask.empty()) in.mask.assign(in.ids.size(), 1);
    for (size_t i = 0; i < in.mask.size(); ++i) {
      if (in.mask[i] != 0 && in.mask[i] != 1) throw Error("attention_mask" + at(i, in.L) + " is not 0 or 1");
      // The engine numbers positions by counting non-pad ids over the row, as Hugging Face does,
      // and runs only the mask-1 tokens: a masked non-pad token would shift the positions after it.
      if (in.mask[i] == 0 && in.ids[i] != pad)
        throw Error("attention_mask" + at(i, in.L) + " is 0 but input_ids" + at(i, in.L) + " = " +
                    std::to_string(in.ids[i]) + " is not pad_token_id " + std::to_string(pad) +
                    "; positions are computed from the ids as Hugging Face does, so only <pad> may be masked");
    }
    for (size_t i = 0; i < in.type_ids.size(); ++i)
      if (in.type_ids[i] < 0 || in.type_ids[i] >= cfg.type_vocab_size)
        throw Error("token_type_ids" + at(i, in.L) + " = " + std::to_string(in.type_ids[i]) +
                    " is outside [0, type_vocab_size = " + std::to_string(cfg.type_vocab_size) + ")");
    const Batch batch = Batch::from_padded(in.ids, in.mask, in.type_ids, in.B, in.L, &where);
    for (size_t b = 0; b < in.B; ++b) {
      const size_t n = batch.offsets[b + 1] - batch.offsets[b];
      if (n == 0) throw Error("row " + std::to_string(b) + " of input_ids has no token with attention_mask 1");
      if (n > static_cast<size_t>(cfg.max_sequence_length()))
        throw Error("row " + std::to_string(b) + " has " + std::to_string(n) + " tokens; the model allows at most " +
                    std::to_string(cfg.max_sequence_length()));
    }
    ForwardOptions fo;
    fo.all_hidden_states = want.hidden_states;
    fo.logits = want.logits;
    fo.pooler = want.pooler;
    fo.sequence_logits = want.sequence;
    fo.token_logits = want.token;
    fo.span_logits = want.span;
    out = model.forward(batch, fo);
  }

  const auto B = static_cast<py::ssize_t>(in.B), L = static_cast<py::ssize_t>(in.L);
  // Packed rows (tokens, cols) to (B, L, cols) with zeros at padding; cols 0: (B, L).
  const auto scatter = [&](const float* data, size_t cols) {
    std::vector<float> full;
    {
      py::gil_scoped_release nogil;
      const size_t c = std::max<size_t>(cols, 1);
      full.assign(in.B * in.L * c, 0.0f);
      for (size_t t = 0; t < where.size(); ++t) std::memcpy(full.data() + where[t] * c, data + t * c, c * sizeof(float));
    }
    std::vector<py::ssize_t> shape{B, L};
    if (cols) shape.push_back(static_cast<py::ssize_t>(cols));
    return to_numpy(std::move(full), shape);
  };
  py::dict result;
  result["last_hidden_state"] = scatter(out.last_hidden_state.data.data(), H);
  if (want.hidden_states) {
    py::tuple hs(out.hidden_states.size());
    for (size_t i = 0; i < out.hidden_states.size(); ++i) hs[i] = scatter(out.hidden_states[i].data.data(), H);
    result["hidden_states"] = hs;
  }
  if (want.logits) result["logits"] = scatter(out.logits.data.data(), out.logits.cols);
  if (want.pooler) result["pooler_output"] = to_numpy(std::move(out.pooler_output));
  if (want.sequence) result["sequence_logits"] = to_numpy(std::move(out.sequence_logits));
  if (want.token) result["token_logits"] = scatter(out.token_logits.data.data(), out.token_logits.cols);
  if (want.span) {
    result["start_logits"] = scatter(out.start_logits.data(), 0);
    result["end_logits"] = scatter(out.end_logits.data(), 0);
  }
  return result;
}

py::dict config_dict(const ModelConfig& c) {
  py::dict d;
  d["vocab_size"] = c.vocab_size;
  d["hidden_size"] = c.hidden_size;
  d["num_hidden_layers"] = c.num_hidden_layers;
  d["num_attention_heads"] = c.num_attention_heads;
  d["intermediate_size"] = c.intermediate_size;
  d["max_position_embeddings"] = c.max_position_embeddings;
  d["type_vocab_size"] = c.type_vocab_size;
  d["pad_token_id"] = c.pad_token_id;
  d["layer_norm_eps"] = c.layer_norm_eps;
  d["hidden_act"] = c.hidden_act;
  d["model_type"] = c.model_type;
  d["position_embedding_type"] = c.position_embedding_type;
  d["architectures"] = c.architectures;
  py::dict id2label;
  for (size_t i = 0; i < c.id2label.size(); ++i) id2label[py::int_(i)] = c.id2label[i];
  d["id2label"] = id2label;
  d["label2id"] = c.label2id;
  d["num_labels"] = c.num_labels();
  d["problem_type"] = c.problem_type.empty() ? py::object(py::none()) : py::object(py::str(c.problem_type));
  d["max_sequence_length"] = c.max_sequence_length();
  return d;
}

}  // namespace

void register_model(py::module_& m) {
  py::class_<Model>(m, "Model", "A loaded RoBERTa encoder (immutable; share it between threads).")
      .def(py::init([](const std::string& path, const std::string& dtype) {
             const LoadOptions o = parse_dtype(dtype);
             py::gil_scoped_release nogil;
             return Model::load(path, o);
           }),
           py::arg("path"), py::arg("dtype") = "float32",
           "Loads config.json and the safetensors weights of a Hugging Face model folder.")
      .def(py::init([](const Model& other) { return other; }), py::arg("other"), "A model sharing another's weights.")
      .def(
          "forward",
          [](const Model& model, const IdArray& ids, std::optional<IdArray> mask, std::optional<IdArray> types,
             bool hidden_states, bool logits, bool pooler, bool sequence, bool token, bool span) {
            const Wanted w{hidden_states, logits, pooler, sequence, token, span};
            return forward(model, ids, std::move(mask), std::move(types), w);
          },
          py::arg("input_ids"), py::arg("attention_mask") = py::none(), py::arg("token_type_ids") = py::none(),
          py::arg("hidden_states") = false, py::arg("logits") = false, py::arg("pooler") = false,
          py::arg("sequence_logits") = false, py::arg("token_logits") = false, py::arg("span_logits") = false,
          "The outputs asked for, as a dict of float32 arrays (B, L, ...) with zeros at padding.")
      .def_property_readonly("config", [](const Model& m) { return config_dict(m.config()); },
                             "The config.json fields the engine uses, as a dict.")
      .def("has_head", [](const Model& m, const std::string& head) { return m.has_head(parse_head(head)); },
           py::arg("head"),
           "Whether the checkpoint has a head: masked_lm, pooler, sequence_classification,\n"
           "token_classification or question_answering.")
      .def("parameter_count", &Model::parameter_count)
      .def("weight_bytes", &Model::weight_bytes)
      .def_property_readonly("dir", [](const Model& m) { return m.dir().string(); });
}

}  // namespace roberta::python
