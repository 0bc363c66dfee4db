#include "roberta/cross_encoder.h"

#include <algorithm>
#include <cmath>

#include "pipelines/pipeline_util.h"
#include "roberta/error.h"
#include "util/files.h"

namespace roberta {

CrossEncoderActivation parse_cross_encoder_activation(const std::string& name) {
  std::string cls = name;
  for (const char* prefix : {"torch.nn.modules.activation.", "torch.nn.modules.linear.", "torch.nn."})
    if (cls.rfind(prefix, 0) == 0) {
      cls = cls.substr(std::string(prefix).size());
      break;
    }
  if (cls == "Identity") return CrossEncoderActivation::kIdentity;
  if (cls == "Sigmoid") return CrossEncoderActivation::kSigmoid;
  if (cls == "Tanh") return CrossEncoderActivation::kTanh;
  if (cls == "ReLU") return CrossEncoderActivation::kReLU;
  if (cls == "Softmax") return CrossEncoderActivation::kSoftmax;
  throw Error("activation \"" + name + "\" is not supported (Identity, Sigmoid, Tanh, ReLU, Softmax)");
}

const char* cross_encoder_activation_name(CrossEncoderActivation a) {
  switch (a) {
    case CrossEncoderActivation::kIdentity: return "Identity";
    case CrossEncoderActivation::kSigmoid: return "Sigmoid";
    case CrossEncoderActivation::kTanh: return "Tanh";
    case CrossEncoderActivation::kReLU: return "ReLU";
    case CrossEncoderActivation::kSoftmax: return "Softmax";
  }
  return "?";
}

CrossEncoderConfig CrossEncoderConfig::from_json_text(const std::string& text, const std::string& source) {
  const nlohmann::json doc = util::parse_json(text, source);
  CrossEncoderConfig c;
  std::string path, field;
  if (doc.is_object() && doc.contains("sentence_transformers") && doc["sentence_transformers"].is_object() &&
      doc["sentence_transformers"].contains("activation_fn")) {
    field = "sentence_transformers.activation_fn";
    const auto& v = doc["sentence_transformers"]["activation_fn"];
    if (!v.is_string()) throw Error(source + ": " + field + " must be a string", ErrorKind::kInvalidModel);
    path = v.get<std::string>();
  } else if (doc.is_object() && doc.contains("sbert_ce_default_activation_function") &&
             !doc["sbert_ce_default_activation_function"].is_null()) {
    field = "sbert_ce_default_activation_function";
    const auto& v = doc[field];
    if (!v.is_string()) throw Error(source + ": " + field + " must be a string", ErrorKind::kInvalidModel);
    path = v.get<std::string>();
  }
  if (field.empty()) return c;
  if (path.rfind("torch.", 0) != 0) {
    c.note = source + ": " + field + " \"" + path +
             "\" is not a torch class; ignored as sentence-transformers does without trust_remote_code";
    return c;
  }
  try {
    c.activation = parse_cross_encoder_activation(path);
  } catch (const Error& e) {
    throw Error(source + ": " + field + ": " + e.what(), ErrorKind::kInvalidModel);
  }
  return c;
}

CrossEncoderConfig CrossEncoderConfig::from_dir(const std::filesystem::path& dir) {
  const auto path = dir / "config.json";
  return from_json_text(util::read_file(path), path.string());
}

CrossEncoder::CrossEncoder(Model model, Tokenizer tokenizer, CrossEncoderConfig config)
    : tokenizer_(std::move(tokenizer)), model_config_(model.config()), config_(std::move(config)) {
  model.require_head(Head::kSequenceClassification, "so it cannot score text pairs");
  model_.emplace(std::move(model));
}

CrossEncoder::CrossEncoder(Tokenizer tokenizer, ModelConfig model_config, CrossEncoderConfig config)
    : tokenizer_(std::move(tokenizer)), model_config_(std::move(model_config)), config_(std::move(config)) {}

CrossEncoder CrossEncoder::load(const std::filesystem::path& dir, const LoadOptions& options) {
  CrossEncoderConfig config = CrossEncoderConfig::from_dir(dir);
  auto [model, tokenizer] = pipeline::load_model_and_tokenizer(dir, options);
  return CrossEncoder(std::move(model), std::move(tokenizer), std::move(config));
}

CrossEncoderActivation CrossEncoder::default_activation() const {
  if (config_.activation) return *config_.activation;
  return model_config_.num_labels() == 1 ? CrossEncoderActivation::kSigmoid : CrossEncoderActivation::kIdentity;
}

size_t CrossEncoder::max_length() const { return pipeline::truncation_length(model_config_, tokenizer_); }

CrossEncoder::Prepared CrossEncoder::prepare(const TextPair& pair, const CrossEncoderOptions& options) const {
  pipeline::require_utf8(pair.first, "first text");
  pipeline::require_utf8(pair.second, "second text");
  EncodeOptions eo;
  // A max_length given replaces the tokenizer's (sentence-transformers sets model_max_length to it).
  eo.max_length =
      options.max_length ? std::min(options.max_length, pipeline::model_max_length(model_config_)) : max_length();
  eo.truncation = TruncationStrategy::kLongestFirst;
  eo.truncation_side = options.truncation_side;
  Prepared p;
  p.encodings.push_back(tokenizer_.encode_pair(pair.first, pair.second, eo));
  return p;
}

CrossEncoder::Prepared CrossEncoder::prepare(std::span<const TextPair> pairs, const CrossEncoderOptions& options) const {
  Prepared p;
  for (size_t i = 0; i < pairs.size(); ++i) {
    try {
      p.encodings.push_back(std::move(prepare(pairs[i], options).encodings.front()));
    } catch (const Error& e) {
      throw e.about_input(i);
    }
  }
  return p;
}

std::vector<Result<std::vector<float>>> CrossEncoder::run_batched(std::span<const TextPair> pairs,
                                                                  const CrossEncoderOptions& options) const {
  return pipeline::run_batched_sequences<std::vector<float>>(
      *this, pairs, options, [&](const Prepared& p, const Matrix& rows) { return finish(p, rows, options).data; });
}

Matrix CrossEncoder::run(const Prepared& prepared) const {
  return pipeline::sequence_logits(pipeline::require_model(model_, "CrossEncoder"), prepared.encodings);
}

Matrix CrossEncoder::run(const Batch& batch) const {
  return pipeline::batch_sequence_logits(pipeline::require_model(model_, "CrossEncoder"), batch);
}

Matrix CrossEncoder::finish(const Prepared& prepared, const Matrix& logits, const CrossEncoderOptions& options) const {
  const size_t L = static_cast<size_t>(model_config_.num_labels());
  if (logits.rows != prepared.encodings.size() || logits.cols != L)
    throw Error("CrossEncoder::finish: logits are " + std::to_string(logits.rows) + "x" + std::to_string(logits.cols) +
                ", expected " + std::to_string(prepared.encodings.size()) + "x" + std::to_string(L));
  const CrossEncoderActivation act = options.activation.value_or(default_activation());
  Matrix out(logits.rows, L);
  for (size_t r = 0; r < logits.rows; ++r) {
    const float* x = logits.row(r);
    float* y = out.row(r);
    switch (act) {
      case CrossEncoderActivation::kIdentity: std::copy(x, x + L, y); break;
      case CrossEncoderActivation::kSigmoid:
        for (size_t j = 0; j < L; ++j) y[j] = static_cast<float>(pipeline::sigmoid(x[j]));
        break;
      case CrossEncoderActivation::kTanh:
        for (size_t j = 0; j < L; ++j) y[j] = std::tanh(x[j]);
        break;
      case CrossEncoderActivation::kReLU:
        for (size_t j = 0; j < L; ++j) y[j] = std::max(x[j], 0.0f);
        break;
      case CrossEncoderActivation::kSoftmax: pipeline::softmax(x, L, y); break;  // torch's dim=None on 2-D: dim 1
    }
    if (options.apply_softmax) {
      std::vector<float> tmp(y, y + L);
      pipeline::softmax(tmp.data(), L, y);
    }
  }
  return out;
}

Matrix CrossEncoder::predict(std::span<const TextPair> pairs, const CrossEncoderOptions& options) const {
  const size_t L = static_cast<size_t>(model_config_.num_labels());
  Matrix all(pairs.size(), L);
  const size_t step = std::max<size_t>(1, options.batch_size);
  for (size_t b = 0; b < pairs.size(); b += step) {
    const auto chunk = pairs.subspan(b, std::min(step, pairs.size() - b));
    Prepared p;
    try {
      p = prepare(chunk, options);
    } catch (const Error& e) {  // about the pair's position in `pairs`, not in the chunk
      throw e.input() ? Error(e.detail(), e.kind()).about_input(b + *e.input()) : e;
    }
    const Matrix scores = finish(p, run(p), options);
    std::copy(scores.data.begin(), scores.data.end(), all.row(b));
  }
  return all;
}

std::vector<RankedDocument> CrossEncoder::rank_scores(std::span<const float> scores,
                                                      std::span<const std::string> documents,
                                                      const RankOptions& options) {
  if (scores.size() != documents.size())
    throw Error("rank: " + std::to_string(scores.size()) + " scores for " + std::to_string(documents.size()) +
                " documents");
  std::vector<RankedDocument> ranked;
  for (size_t i = 0; i < scores.size(); ++i) {
    RankedDocument d;
    d.corpus_id = i;
    d.score = scores[i];
    if (options.return_documents) d.text = documents[i];
    ranked.push_back(std::move(d));
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const RankedDocument& a, const RankedDocument& b) {
    return pipeline::higher_score(a.score, b.score);
  });
  if (options.top_k && *options.top_k < ranked.size()) ranked.resize(*options.top_k);
  return ranked;
}

void CrossEncoder::require_one_label() const {
  if (model_config_.num_labels() != 1)
    throw Error("CrossEncoder::rank needs a model with one label; this one has " +
                    std::to_string(model_config_.num_labels()) + " (use predict)",
                ErrorKind::kInvalidModel);
}

CrossEncoder::Prepared CrossEncoder::prepare_rank(const std::string& query, std::span<const std::string> documents,
                                                  const RankOptions& options) const {
  require_one_label();
  if (options.long_documents == LongDocuments::kTruncate) {
    std::vector<TextPair> pairs;
    for (const std::string& d : documents) pairs.emplace_back(query, d);
    return prepare(pairs, options.scoring);
  }
  Prepared p;
  for (size_t i = 0; i < documents.size(); ++i) {
    try {
      pipeline::require_utf8(documents[i], "document");
    } catch (const Error& e) {
      throw e.about_input(i);
    }
    // (an Error of the windows is the query's and the options', not this document's)
    for (Encoding& e : windows(query, documents[i], options)) p.encodings.push_back(std::move(e)), p.document_of.push_back(i);
  }
  return p;
}

std::vector<RankedDocument> CrossEncoder::finish_rank(const Prepared& prepared, const Matrix& logits,
                                                      std::span<const std::string> documents,
                                                      const RankOptions& options) const {
  require_one_label();
  const Matrix scores = finish(prepared, logits, options.scoring);
  if (prepared.document_of.empty()) return rank_scores(scores.data, documents, options);
  // A document's score: the largest, or the mean, of its windows' (mean summed in double).
  std::vector<double> joined(documents.size(), options.long_documents == LongDocuments::kMax ? -INFINITY : 0.0);
  std::vector<size_t> count(documents.size(), 0);
  for (size_t w = 0; w < prepared.document_of.size(); ++w) {
    const size_t d = prepared.document_of[w];
    const float s = scores.data[w];
    if (options.long_documents == LongDocuments::kMax)
      joined[d] = std::isnan(s) || std::isnan(joined[d]) ? NAN : std::max(joined[d], static_cast<double>(s));
    else
      joined[d] += s;
    ++count[d];
  }
  std::vector<float> per_document(documents.size());
  for (size_t d = 0; d < documents.size(); ++d)
    per_document[d] = static_cast<float>(options.long_documents == LongDocuments::kMax
                                             ? joined[d]
                                             : joined[d] / static_cast<double>(std::max<size_t>(count[d], 1)));
  return rank_scores(per_document, documents, options);
}

std::vector<RankedDocument> CrossEncoder::rank(const std::string& query, std::span<const std::string> documents,
                                               const RankOptions& options) const {
  require_one_label();
  if (options.long_documents != LongDocuments::kTruncate) {
    const Prepared p = prepare_rank(query, documents, options);
    return finish_rank(p, run(p), documents, options);
  }
  std::vector<TextPair> pairs;
  for (const std::string& d : documents) pairs.emplace_back(query, d);
  const Matrix scores = predict(pairs, options.scoring);
  return rank_scores(scores.data, documents, options);
}

}  // namespace roberta
