// The task pipelines for Python: TextClassifier, ZeroShotClassifier, TokenClassifier,
// QuestionAnswerer and CrossEncoder. Each call converts its arguments, releases the GIL while it
// tokenizes and runs the model, and returns plain Python results (dicts with transformers' keys)
// or numpy arrays that own their buffers.
#include "common.h"
#include "roberta/cross_encoder.h"
#include "roberta/question_answerer.h"
#include "roberta/text_classifier.h"
#include "roberta/token_classifier.h"
#include "roberta/zero_shot_classifier.h"

namespace roberta::python {
namespace {

py::dict entity_dict(const TokenEntity& e, bool aggregated) {
  py::dict d;
  d[aggregated ? "entity_group" : "entity"] = e.entity;
  d["score"] = static_cast<double>(e.score);
  if (!aggregated) d["index"] = e.index;
  d["word"] = e.word;
  d["start"] = e.start;
  d["end"] = e.end;
  return d;
}

TokenClassifyOptions token_options(const std::string& aggregation, const std::vector<std::string>& ignore_labels,
                                   std::optional<size_t> stride) {
  TokenClassifyOptions o;
  o.aggregation = parse_aggregation(aggregation);
  o.ignore_labels = ignore_labels;
  o.stride = stride;
  return o;
}

py::list entity_lists(const std::vector<std::vector<TokenEntity>>& results, bool aggregated) {
  py::list out;
  for (const auto& r : results) {
    py::list rows;
    for (const auto& e : r) rows.append(entity_dict(e, aggregated));
    out.append(rows);
  }
  return out;
}

std::optional<CrossEncoderActivation> activation_of(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  return parse_cross_encoder_activation(*name);
}


// TextClassifier and ZeroShotClassifier (and its label parser).
void register_classifiers(py::module_& m) {
  py::class_<TextClassifier>(m, "TextClassifier", "transformers' text-classification pipeline in C++.")
      .def(py::init([](const Model& model, const Tokenizer& tok) { return TextClassifier(model, tok); }),
           py::arg("model"), py::arg("tokenizer"))
      .def(
          "__call__",
          [](const TextClassifier& c, const std::vector<std::pair<std::string, std::optional<std::string>>>& inputs,
             std::optional<size_t> top_k, bool return_all_scores, const std::string& function_to_apply,
             bool truncation, const std::string& strategy, size_t max_length) {
            TextClassifyOptions o;
            o.top_k = top_k;
            o.return_all_scores = return_all_scores;
            o.function_to_apply = parse_classification_function(function_to_apply);
            o.truncation = truncation;
            o.truncation_strategy = strategy == "only_first"    ? TruncationStrategy::kOnlyFirst
                                    : strategy == "only_second" ? TruncationStrategy::kOnlySecond
                                                                : TruncationStrategy::kLongestFirst;
            o.max_length = max_length;
            std::vector<TextInput> in;
            for (const auto& [text, pair] : inputs) in.push_back({text, pair});
            std::vector<std::vector<LabelScore>> results;
            {
              py::gil_scoped_release nogil;
              results = values_or_first_error(c.run_batched(in, o));
            }
            py::list out;
            for (const auto& r : results) {
              py::list rows;
              for (const auto& s : r) {
                py::dict d;
                d["label"] = s.label;
                d["score"] = static_cast<double>(s.score);
                rows.append(d);
              }
              out.append(rows);
            }
            return out;
          },
          py::arg("inputs"), py::arg("top_k") = 1, py::arg("return_all_scores") = false,
          py::arg("function_to_apply") = "default", py::arg("truncation") = false,
          py::arg("truncation_strategy") = "longest_first", py::arg("max_length") = 0,
          "For each (text, text_pair or None): a list of {label, score} dicts.");

  py::class_<ZeroShotClassifier>(m, "ZeroShotClassifier", "transformers' zero-shot-classification pipeline in C++.")
      .def(py::init([](const Model& model, const Tokenizer& tok) { return ZeroShotClassifier(model, tok); }),
           py::arg("model"), py::arg("tokenizer"))
      .def_property_readonly("warning", &ZeroShotClassifier::warning,
                             "Why the entailment column is a guess (no \"entail\" label), or \"\".")
      .def_property_readonly("entailment_id", &ZeroShotClassifier::entailment_id)
      .def(
          "__call__",
          [](const ZeroShotClassifier& c, const std::vector<std::string>& sequences,
             const std::vector<std::string>& labels, const std::string& hypothesis_template, bool multi_label) {
            ZeroShotOptions o;
            o.candidate_labels = labels;
            o.hypothesis_template = hypothesis_template;
            o.multi_label = multi_label;
            std::vector<ZeroShotResult> results;
            {
              py::gil_scoped_release nogil;
              results = values_or_first_error(c.run_batched(sequences, o));
            }
            py::list out;
            for (const auto& r : results) {
              py::dict d;
              d["sequence"] = r.sequence;
              d["labels"] = r.labels;
              py::list scores;
              for (float s : r.scores) scores.append(static_cast<double>(s));
              d["scores"] = scores;
              out.append(d);
            }
            return out;
          },
          py::arg("sequences"), py::arg("candidate_labels"), py::arg("hypothesis_template") = "This example is {}.",
          py::arg("multi_label") = false, "For each sequence: {sequence, labels, scores}, best label first.");
  m.def("parse_candidate_labels", &parse_candidate_labels, py::arg("labels"),
        "candidate_labels given as one string: split at commas, stripped.");
}

// TokenClassifier (NER) and QuestionAnswerer: answers that are spans of the text.
void register_span_tasks(py::module_& m) {
  py::class_<TokenClassifier>(m, "TokenClassifier", "transformers' token-classification (NER) pipeline in C++.")
      .def(py::init([](const Model& model, const Tokenizer& tok) { return TokenClassifier(model, tok); }),
           py::arg("model"), py::arg("tokenizer"))
      .def(
          "__call__",
          [](const TokenClassifier& c, const std::vector<std::string>& texts, const std::string& aggregation,
             const std::vector<std::string>& ignore_labels, std::optional<size_t> stride) {
            const TokenClassifyOptions o = token_options(aggregation, ignore_labels, stride);
            std::vector<Result<std::vector<TokenEntity>>> results;
            {
              py::gil_scoped_release nogil;
              results = c.run_batched(texts, o);
            }
            return entity_lists(values_or_first_error(std::move(results)), o.aggregation != Aggregation::kNone);
          },
          py::arg("texts"), py::arg("aggregation_strategy") = "none",
          py::arg("ignore_labels") = std::vector<std::string>{"O"}, py::arg("stride") = py::none(),
          "For each text: a list of entity dicts (entity or entity_group, score, [index,] word, start, end).")
      .def(
          "words",
          [](const TokenClassifier& c, const std::vector<std::vector<std::string>>& sentences,
             const std::string& delimiter, const std::string& aggregation,
             const std::vector<std::string>& ignore_labels, std::optional<size_t> stride) {
            const TokenClassifyOptions o = token_options(aggregation, ignore_labels, stride);
            std::vector<std::vector<TokenEntity>> results;
            {
              py::gil_scoped_release nogil;
              for (size_t i = 0; i < sentences.size(); ++i)
                results.push_back(
                    for_input(i, sentences.size(), [&] { return c.classify_words(sentences[i], delimiter, o); }));
            }
            return entity_lists(results, o.aggregation != Aggregation::kNone);
          },
          py::arg("sentences"), py::arg("delimiter") = " ", py::arg("aggregation_strategy") = "none",
          py::arg("ignore_labels") = std::vector<std::string>{"O"}, py::arg("stride") = py::none(),
          "is_split_into_words: for each list of words, the entities; start / end index delimiter.join(words).");

  py::class_<QuestionAnswerer>(m, "QuestionAnswerer", "transformers' question-answering pipeline in C++.")
      .def(py::init([](const Model& model, const Tokenizer& tok) { return QuestionAnswerer(model, tok); }),
           py::arg("model"), py::arg("tokenizer"))
      .def(
          "__call__",
          [](const QuestionAnswerer& qa, const std::vector<std::pair<std::string, std::string>>& examples,
             size_t top_k, std::optional<size_t> doc_stride, size_t max_answer_len, std::optional<size_t> max_seq_len,
             size_t max_question_len, bool handle_impossible_answer, bool align_to_words) {
            QuestionAnswerOptions o;
            o.top_k = top_k;
            o.doc_stride = doc_stride;
            o.max_answer_len = max_answer_len;
            o.max_seq_len = max_seq_len;
            o.max_question_len = max_question_len;
            o.handle_impossible_answer = handle_impossible_answer;
            o.align_to_words = align_to_words;
            std::vector<QuestionAnswerer::Input> inputs;
            for (const auto& [question, context] : examples) inputs.push_back({question, context});
            std::vector<Result<std::vector<QuestionAnswer>>> batched;
            {
              py::gil_scoped_release nogil;
              batched = qa.run_batched(inputs, o);
            }
            const std::vector<std::vector<QuestionAnswer>> results = values_or_first_error(std::move(batched));
            py::list out;
            for (const auto& r : results) {
              py::list rows;
              for (const auto& a : r) {
                py::dict d;
                d["score"] = static_cast<double>(a.score);
                d["start"] = a.start;
                d["end"] = a.end;
                d["answer"] = a.answer;
                rows.append(d);
              }
              out.append(rows);
            }
            return out;
          },
          py::arg("examples"), py::arg("top_k") = 1, py::arg("doc_stride") = py::none(), py::arg("max_answer_len") = 15,
          py::arg("max_seq_len") = py::none(), py::arg("max_question_len") = 64,
          py::arg("handle_impossible_answer") = false, py::arg("align_to_words") = true,
          "For each (question, context): a list of {score, start, end, answer} dicts, best first.");
}

// CrossEncoder: scores of text pairs.
void register_cross_encoder(py::module_& m) {
  py::class_<CrossEncoder>(m, "CrossEncoder", "sentence-transformers' CrossEncoder in C++.")
      .def(py::init([](const std::string& path, const std::string& dtype) {
             const LoadOptions o = parse_dtype(dtype);
             py::gil_scoped_release nogil;
             return CrossEncoder::load(path, o);
           }),
           py::arg("path"), py::arg("dtype") = "float32")
      .def(
          "predict",
          [](const CrossEncoder& ce, const std::vector<std::pair<std::string, std::string>>& pairs, size_t batch_size,
             std::optional<std::string> activation, bool apply_softmax, size_t max_length) {
            CrossEncoderOptions o;
            o.batch_size = std::max<size_t>(1, batch_size);
            o.activation = activation_of(activation);
            o.apply_softmax = apply_softmax;
            o.max_length = max_length;
            Matrix scores;
            try {
              py::gil_scoped_release nogil;
              scores = ce.predict(pairs, o);
            } catch (const Error& err) {  // "input N: ..." from 1, as for_input; a call's only pair unnamed
              if (pairs.size() == 1) throw Error(err.detail(), err.kind());
              throw;
            }
            if (scores.rows == 0) scores.cols = static_cast<size_t>(ce.model_config().num_labels());
            return to_numpy(std::move(scores));
          },
          py::arg("pairs"), py::arg("batch_size") = 32, py::arg("activation") = py::none(),
          py::arg("apply_softmax") = false, py::arg("max_length") = 0,
          "(pairs, num_labels) float32 scores: the activation, then the optional softmax.")
      .def(
          "rank_scores",
          [](const CrossEncoder& ce, const std::string& query, const std::vector<std::string>& documents,
             const std::string& long_documents, size_t stride, size_t batch_size, std::optional<std::string> activation,
             size_t max_length) {
            RankOptions o;
            o.long_documents = parse_long_documents(long_documents);
            o.stride = stride;
            o.scoring.batch_size = std::max<size_t>(1, batch_size);
            o.scoring.activation = activation_of(activation);
            o.scoring.max_length = max_length;
            std::vector<RankedDocument> ranked;
            {
              py::gil_scoped_release nogil;
              ranked = ce.rank(query, documents, o);
            }
            std::vector<float> scores(documents.size());
            for (const RankedDocument& d : ranked) scores[d.corpus_id] = d.score;
            return to_numpy(std::move(scores), {static_cast<py::ssize_t>(documents.size())});
          },
          py::arg("query"), py::arg("documents"), py::arg("long_documents") = "truncate", py::arg("stride") = 128,
          py::arg("batch_size") = 32, py::arg("activation") = py::none(), py::arg("max_length") = 0,
          "(documents,) float32 scores in document order; long documents in windows joined by max or mean.")
      .def_property_readonly("num_labels", [](const CrossEncoder& ce) { return ce.model_config().num_labels(); })
      .def_property_readonly("id2label", [](const CrossEncoder& ce) { return ce.model_config().id2label; })
      .def_property_readonly("max_length", &CrossEncoder::max_length)
      .def_property_readonly("default_activation", [](const CrossEncoder& ce) {
        return std::string(cross_encoder_activation_name(ce.default_activation()));
      });
}

}  // namespace

void register_tasks(py::module_& m) {
  register_classifiers(m);
  register_span_tasks(m);
  register_cross_encoder(m);
}

}  // namespace roberta::python
