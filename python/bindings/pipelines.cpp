// The pipelines for Python: FillMask, Embedder (sentence-transformers folders), SparseEncoder
// (SPLADE), M3Embedder (bge-m3) and the token states of feature extraction. Each call converts its Python arguments, releases the GIL for the
// tokenizer and the model, and builds Python results at the end; arrays take over the C++ buffers.
#include <algorithm>
#include <array>
#include <iterator>
#include <numeric>

#include "common.h"
#include "roberta/pipelines.h"

namespace roberta::python {
namespace {

EmbedOptions embed_options(std::optional<std::string> prompt, std::optional<std::string> prompt_name,
                           size_t batch_size, size_t max_length, bool strip) {
  EmbedOptions o;
  o.strip = strip;
  o.prompt = std::move(prompt);
  o.prompt_name = std::move(prompt_name);
  o.batch_size = std::max<size_t>(1, batch_size);
  o.max_length = max_length;
  return o;
}

// Last hidden states of texts, one (tokens, hidden) array each, in batches of `batch_size` texts.
std::vector<Matrix> token_states(const Model& model, const Tokenizer& tok, const std::vector<std::string>& texts,
                                 bool truncation, size_t batch_size, size_t max_length) {
  const auto positions = static_cast<size_t>(model.config().max_sequence_length());
  EncodeOptions eo;  // truncation as transformers' tokenizer: at max_length, else at model_max_length
  if (truncation)
    eo.max_length = std::min(positions, max_length ? max_length : tok.model_max_length().value_or(positions));
  std::vector<Matrix> result;
  const size_t H = static_cast<size_t>(model.config().hidden_size);
  for (size_t start = 0; start < texts.size(); start += batch_size) {
    const size_t end = std::min(texts.size(), start + batch_size);
    Batch batch;
    for (size_t i = start; i < end; ++i) {
      const Encoding e = for_input(i, texts.size(), [&] {
        Encoding enc = tok.encode(texts[i], eo);
        if (enc.size() > positions)
          throw Error("the text has " + std::to_string(enc.size()) + " tokens; the model allows at most " +
                      std::to_string(positions) + " (pass truncation=True to cut it)");
        return enc;
      });
      batch.add_sequence(e.ids);
    }
    const Outputs out = model.forward(batch);
    for (size_t b = 0; b < batch.num_sequences(); ++b) {
      Matrix m(batch.offsets[b + 1] - batch.offsets[b], H);
      std::copy_n(out.last_hidden_state.row(batch.offsets[b]), m.rows * H, m.data.data());
      result.push_back(std::move(m));
    }
  }
  return result;
}


// FillMask.
void register_fill_mask(py::module_& m) {
  py::class_<FillMask>(m, "FillMask", "Hugging Face's fill-mask pipeline in C++.")
      .def(py::init([](const Model& model, const Tokenizer& tok) { return FillMask(model, tok); }), py::arg("model"),
           py::arg("tokenizer"))
      .def(
          "__call__",
          [](const FillMask& fill, const std::vector<std::string>& texts, size_t top_k,
             const std::vector<std::string>& targets, bool truncation, size_t batch_size) {
            FillMaskOptions o;
            o.top_k = top_k;
            o.targets = targets;
            o.truncation = truncation;
            const size_t n = texts.size(), step = std::max<size_t>(1, batch_size);
            std::vector<std::vector<std::vector<FillMaskCandidate>>> all;
            {
              py::gil_scoped_release nogil;
              // batch_size texts a forward pass; the first bad text's error once all are done.
              std::vector<Result<std::vector<std::vector<FillMaskCandidate>>>> results;
              for (size_t b = 0; b < n; b += step) {
                auto some = fill.run_batched(std::span(texts).subspan(b, std::min(step, n - b)), o);
                std::move(some.begin(), some.end(), std::back_inserter(results));
              }
              all = values_or_first_error(std::move(results));
            }
            py::list per_text;
            for (const auto& masks : all) {
              py::list per_mask;
              for (const auto& list : masks) {
                py::list rows;
                for (const auto& c : list) {
                  py::dict d;
                  d["score"] = static_cast<double>(c.score);
                  d["token"] = c.token;
                  d["token_str"] = c.token_str;
                  d["sequence"] = c.sequence;
                  rows.append(d);
                }
                per_mask.append(rows);
              }
              per_text.append(per_mask);
            }
            return per_text;
          },
          py::arg("texts"), py::arg("top_k") = 5, py::arg("targets") = std::vector<std::string>{},
          py::arg("truncation") = false, py::arg("batch_size") = 32,
          "For each text, one candidate list per <mask>: dicts {score, token, token_str, sequence}; batch_size texts "
          "a forward pass.")
      .def(
          "target_ids",
          [](const FillMask& fill, const std::vector<std::string>& targets) {
            std::vector<std::string> notes;
            auto ids = fill.target_ids(targets, &notes);
            return std::make_pair(ids, notes);
          },
          py::arg("targets"), "(ids, notes): the ids the targets resolve to and a note per word that is not one token.");
}

// Embedder, and token_states (the raw token states of texts).
void register_embedder(py::module_& m) {
  py::class_<Embedder>(m, "Embedder", "Sentence embeddings of a sentence-transformers folder.")
      .def(py::init([](const std::string& path, const std::string& dtype) {
             const LoadOptions o = parse_dtype(dtype);
             py::gil_scoped_release nogil;
             return Embedder::load(path, o);
           }),
           py::arg("path"), py::arg("dtype") = "float32")
      .def(
          "encode",
          [](const Embedder& e, const std::vector<std::string>& texts, std::optional<std::string> prompt,
             std::optional<std::string> prompt_name, size_t batch_size, size_t max_length, bool strip) {
            const EmbedOptions o =
                embed_options(std::move(prompt), std::move(prompt_name), batch_size, max_length, strip);
            Matrix rows;
            try {
              py::gil_scoped_release nogil;
              rows = e(texts, o);
            } catch (const Error& err) {  // "input N: ..." from 1, as for_input; a call's only text unnamed
              if (texts.size() == 1) throw Error(err.detail(), err.kind());
              throw;
            }
            return to_numpy(std::move(rows));
          },
          py::arg("texts"), py::arg("prompt") = py::none(), py::arg("prompt_name") = py::none(),
          py::arg("batch_size") = 32, py::arg("max_length") = 0, py::arg("strip") = true,
          "(N, dimension) float32 sentence embeddings with the folder's pooling, Dense and Normalize.")
      .def(
          "encode_tokens",
          [](const Embedder& e, const std::vector<std::string>& texts, std::optional<std::string> prompt,
             std::optional<std::string> prompt_name, size_t batch_size, size_t max_length, bool strip) {
            const EmbedOptions o =
                embed_options(std::move(prompt), std::move(prompt_name), batch_size, max_length, strip);
            std::vector<Matrix> states;
            {
              py::gil_scoped_release nogil;
              std::vector<PreparedText> batch;
              for (size_t start = 0; start < texts.size(); start += o.batch_size) {
                batch.clear();
                for (size_t i = start; i < std::min(texts.size(), start + o.batch_size); ++i)
                  batch.push_back(for_input(i, texts.size(), [&] { return e.prepare(texts[i], o); }));
                for (Matrix& s : e.run_tokens(batch)) states.push_back(std::move(s));
              }
            }
            py::list out;
            for (Matrix& s : states) out.append(to_numpy(std::move(s)));
            return out;
          },
          py::arg("texts"), py::arg("prompt") = py::none(), py::arg("prompt_name") = py::none(),
          py::arg("batch_size") = 32, py::arg("max_length") = 0, py::arg("strip") = true,
          "One (tokens, hidden) float32 array of last hidden states per text (prompt included).")
      .def(
          "prepare",
          [](const Embedder& e, const std::vector<std::string>& texts, std::optional<std::string> prompt,
             std::optional<std::string> prompt_name, size_t max_length, bool strip) {
            const EmbedOptions o = embed_options(std::move(prompt), std::move(prompt_name), 1, max_length, strip);
            std::vector<PreparedText> prepared;
            {
              py::gil_scoped_release nogil;
              for (size_t i = 0; i < texts.size(); ++i)
                prepared.push_back(for_input(i, texts.size(), [&] { return e.prepare(texts[i], o); }));
            }
            py::list out;
            for (PreparedText& p : prepared) out.append(py::make_tuple(std::move(p.ids), p.pooling_start));
            return out;
          },
          py::arg("texts"), py::arg("prompt") = py::none(), py::arg("prompt_name") = py::none(),
          py::arg("max_length") = 0, py::arg("strip") = true,
          "(ids, pooling_start) per text: the tokens encode() runs (prompt + text, stripped unless strip is "
          "false, lower-cased and cut as sentence-transformers tokenizes) and the first one pooling counts.")
      .def(
          "late_chunks",
          [](const Embedder& e, const std::vector<std::string>& texts,
             const std::vector<std::optional<std::vector<std::pair<size_t, size_t>>>>& spans, const std::string& chunk_by,
             size_t chunk_tokens, std::optional<size_t> overlap, std::optional<std::string> prompt,
             std::optional<std::string> prompt_name, size_t batch_size, size_t max_length, std::optional<bool> normalize) {
            LateChunkingOptions o{.text = embed_options(std::move(prompt), std::move(prompt_name), batch_size, max_length,
                                                        false)};
            o.text.normalize = normalize;
            o.chunk_by = parse_chunk_by(chunk_by);
            o.chunk_tokens = chunk_tokens;
            o.overlap = overlap;
            std::vector<std::optional<std::vector<TextSpan>>> given;
            for (const auto& list : spans) {
              if (!list) {
                given.emplace_back();
                continue;
              }
              std::vector<TextSpan> v;
              for (const auto& [a, b] : *list) v.push_back({a, b});
              given.emplace_back(std::move(v));
            }
            std::vector<ChunkedText> docs;
            try {
              py::gil_scoped_release nogil;
              docs = late_chunks(e, texts, o, given);
            } catch (const Error& err) {  // "input N: ...", a call's only text unnamed (as encode)
              if (texts.size() == 1 && err.input()) throw Error(err.detail(), err.kind());
              throw;
            }
            py::list out;
            for (ChunkedText& d : docs) {
              py::list sp;
              for (const TextSpan& t : d.spans) sp.append(py::make_tuple(t.start, t.end));
              out.append(py::make_tuple(sp, to_numpy(std::move(d.embeddings)), d.tokens, d.windows));
            }
            return out;
          },
          py::arg("texts"), py::arg("spans"), py::arg("chunk_by") = "sentences", py::arg("chunk_tokens") = 0,
          py::arg("overlap") = py::none(), py::arg("prompt") = py::none(), py::arg("prompt_name") = py::none(),
          py::arg("batch_size") = 32, py::arg("max_length") = 0, py::arg("normalize") = py::none(),
          "Late chunking: per text (spans, (chunks, dimension) float32, tokens, windows); spans: one list of "
          "(start, end) code point pairs or None (chunked by chunk_by) per text.")
      .def_property_readonly("include_prompt", [](const Embedder& e) { return e.config().include_prompt; })
      .def_property_readonly("dimension", [](const Embedder& e) { return e.dimension(); })
      .def_property_readonly("max_seq_length", &Embedder::max_seq_length)
      .def_property_readonly("model_max_length",
                             [](const Embedder& e) { return e.model().config().max_sequence_length(); })
      .def_property_readonly("prompts", [](const Embedder& e) { return e.config().prompts; })
      .def_property_readonly("default_prompt_name",
                             [](const Embedder& e) -> std::optional<std::string> {
                               if (e.config().default_prompt_name.empty()) return std::nullopt;
                               return e.config().default_prompt_name;
                             })
      .def_property_readonly("normalize", &Embedder::default_normalize)
      .def_property_readonly("pooling", [](const Embedder& e) { return std::string(pooling_name(e.default_pooling())); })
      .def_property_readonly("do_lower_case", [](const Embedder& e) { return e.config().do_lower_case; })
      .def_property_readonly("tokenizer", [](const Embedder& e) { return e.tokenizer(); })
      .def_property_readonly("model", [](const Embedder& e) { return e.model(); });

  m.def(
      "token_states",
      [](const Model& model, const Tokenizer& tok, const std::vector<std::string>& texts, bool truncation,
         size_t batch_size, size_t max_length) {
        std::vector<Matrix> states;
        {
          py::gil_scoped_release nogil;
          states = token_states(model, tok, texts, truncation, std::max<size_t>(1, batch_size), max_length);
        }
        py::list out;
        for (Matrix& s : states) out.append(to_numpy(std::move(s)));
        return out;
      },
      py::arg("model"), py::arg("tokenizer"), py::arg("texts"), py::arg("truncation") = false,
      py::arg("batch_size") = 32, py::arg("max_length") = 0,
      "The last hidden state of each text, (tokens, hidden) float32 each (feature extraction); with truncation,\n"
      "cut at max_length tokens (0: the tokenizer's model_max_length, at most the model's positions).");
}

py::tuple sparse_pair(SparseVector&& v) {
  std::vector<int64_t> ids(v.indices.begin(), v.indices.end());
  const auto n = static_cast<py::ssize_t>(ids.size());
  return py::make_tuple(to_numpy(std::move(ids), {n}), to_numpy(std::move(v.values), {n}));
}

// SparseEncoder: (indices int64, values float32) per text.
void register_sparse_encoder(py::module_& m) {
  py::class_<SparseEncoder>(m, "SparseEncoder", "Sparse (SPLADE) embeddings from a model's MLM head.")
      .def(py::init([](const std::string& path, const std::string& dtype) {
             const LoadOptions o = parse_dtype(dtype);
             py::gil_scoped_release nogil;
             return SparseEncoder::load(path, o);
           }),
           py::arg("path"), py::arg("dtype") = "float32")
      .def(
          "encode",
          [](const SparseEncoder& e, const std::vector<std::string>& texts, std::optional<std::string> prompt,
             size_t batch_size, size_t max_length, bool strip, size_t max_active_dims) {
            SparseOptions o{.max_active_dims = max_active_dims,
                            .text = embed_options(std::move(prompt), std::nullopt, batch_size, max_length, strip)};
            std::vector<SparseVector> rows;
            try {
              py::gil_scoped_release nogil;
              rows = e(texts, o);
            } catch (const Error& err) {  // "input N: ..." from 1; a call's only text unnamed
              if (texts.size() == 1) throw Error(err.detail(), err.kind());
              throw;
            }
            py::list out;
            for (SparseVector& v : rows) out.append(sparse_pair(std::move(v)));
            return out;
          },
          py::arg("texts"), py::arg("prompt") = py::none(), py::arg("batch_size") = 32, py::arg("max_length") = 0,
          py::arg("strip") = false, py::arg("max_active_dims") = 0,
          "(indices int64, values float32) per text: its non-zero weights, ids ascending; max_active_dims > 0 keeps "
          "the largest.")
      .def_property_readonly("dimension", &SparseEncoder::dimension)
      .def_property_readonly("max_seq_length", [](const SparseEncoder& e) { return e.text_preparer().max_seq_length(); })
      .def_property_readonly("prompts", [](const SparseEncoder& e) { return e.text_preparer().config().prompts; })
      .def_property_readonly("default_prompt_name",
                             [](const SparseEncoder& e) -> std::optional<std::string> {
                               const std::string& name = e.text_preparer().config().default_prompt_name;
                               if (name.empty()) return std::nullopt;
                               return name;
                             })
      .def_property_readonly("pooling_strategy",
                             [](const SparseEncoder& e) {
                               return e.pooling().strategy == SpladePoolingConfig::Strategy::kSum ? "sum" : "max";
                             })
      .def_property_readonly("activation_function",
                             [](const SparseEncoder& e) {
                               return e.pooling().activation == SpladePoolingConfig::Activation::kLog1pRelu
                                          ? "log1p_relu"
                                          : "relu";
                             })
      .def_property_readonly("tokenizer", [](const SparseEncoder& e) { return e.text_preparer().tokenizer(); })
      .def_property_readonly("model", [](const SparseEncoder& e) { return e.text_preparer().model(); });
}

// M3Embedder: (dense array or None, [(ids, weights)] or None, [ColBERT arrays] or None).
void register_m3(py::module_& m) {
  py::class_<M3Embedder>(m, "M3Embedder", "bge-m3's dense, lexical and ColBERT outputs from one forward pass.")
      .def(py::init([](const std::string& path, const std::string& dtype) {
             const LoadOptions o = parse_dtype(dtype);
             py::gil_scoped_release nogil;
             return M3Embedder::load(path, o);
           }),
           py::arg("path"), py::arg("dtype") = "float32")
      .def(
          "encode",
          [](const M3Embedder& e, const std::vector<std::string>& texts, size_t batch_size, size_t max_length,
             bool dense, bool sparse, bool colbert, size_t truncate_dim, bool normalize) {
            const M3Options o{.dense = dense, .sparse = sparse, .colbert = colbert,
                              .batch_size = std::max<size_t>(1, batch_size), .max_length = max_length,
                              .truncate_dim = truncate_dim, .normalize = normalize};
            M3Output out;
            try {
              py::gil_scoped_release nogil;
              out = e(texts, o);
            } catch (const Error& err) {
              if (texts.size() == 1) throw Error(err.detail(), err.kind());
              throw;
            }
            py::object d = py::none(), l = py::none(), c = py::none();
            if (dense) d = to_numpy(std::move(out.dense));
            if (sparse) {
              py::list lexical;
              for (SparseVector& v : out.lexical) lexical.append(sparse_pair(std::move(v)));
              l = lexical;
            }
            if (colbert) {
              py::list vecs;
              for (Matrix& v : out.colbert) vecs.append(to_numpy(std::move(v)));
              c = vecs;
            }
            return py::make_tuple(d, l, c);
          },
          py::arg("texts"), py::arg("batch_size") = 32, py::arg("max_length") = 512, py::arg("dense") = true,
          py::arg("sparse") = false, py::arg("colbert") = false, py::arg("truncate_dim") = 0, py::arg("normalize") = true,
          "(dense (N, dim) float32 or None, [(ids int64, weights float32)] or None, [(tokens - 1, colbert dim) float32] "
          "or None).")
      .def(
          "compute_score",
          [](const M3Embedder& e, const std::vector<std::pair<std::string, std::string>>& pairs,
             std::array<double, 3> weights, size_t max_query_length, size_t max_passage_length, size_t batch_size) {
            std::vector<M3Scores> scores;
            {
              py::gil_scoped_release nogil;
              scores = e.compute_score(pairs, weights, max_query_length, max_passage_length, std::max<size_t>(1, batch_size));
            }
            py::list out;
            for (const M3Scores& s : scores)
              out.append(py::make_tuple(s.dense, s.sparse, s.colbert, s.sparse_dense, s.colbert_sparse_dense));
            return out;
          },
          py::arg("pairs"), py::arg("weights"), py::arg("max_query_length") = 512, py::arg("max_passage_length") = 512,
          py::arg("batch_size") = 32, "(dense, sparse, colbert, sparse+dense, colbert+sparse+dense) per pair.")
      .def_property_readonly("dimension", &M3Embedder::dimension)
      .def_property_readonly("colbert_dimension", &M3Embedder::colbert_dimension)
      .def_property_readonly("tokenizer", [](const M3Embedder& e) { return e.tokenizer(); })
      .def_property_readonly("model", [](const M3Embedder& e) { return e.model(); });
}

}  // namespace

void register_pipelines(py::module_& m) {
  register_fill_mask(m);
  register_embedder(m);
  register_sparse_encoder(m);
  register_m3(m);
}

}  // namespace roberta::python
