#include "pipelines/pipeline_util.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <future>
#include <numeric>
#include <optional>

#include "roberta/error.h"
#include "roberta/threads.h"
#include "tokenizer/unicode.h"

namespace roberta::pipeline {

ModelAndTokenizer load_model_and_tokenizer(const std::filesystem::path& dir, const LoadOptions& options) {
  if (num_threads() <= 1) {
    Tokenizer tokenizer = Tokenizer::from_dir(dir);
    return {Model::load(dir, options), std::move(tokenizer)};
  }
  std::future<Model> model = std::async(std::launch::async, [&dir, &options] { return Model::load(dir, options); });
  std::optional<Tokenizer> tokenizer;
  try {
    tokenizer.emplace(Tokenizer::from_dir(dir));
  } catch (...) {
    model.wait();
    throw;  // the tokenizer's error first
  }
  return {model.get(), std::move(*tokenizer)};
}

void require_utf8(std::string_view text, const std::string& what) {
  if (auto bad = unicode::find_invalid_utf8(text))
    throw Error((what.empty() ? "" : what + ": ") + "invalid UTF-8 at byte " + std::to_string(*bad));
}

CodePoints::CodePoints(std::string_view text) : text_(text) {
  for (size_t i = 0; i < text.size();) {
    bytes_.push_back(i);
    cps_.push_back(unicode::next_code_point(text, i));
  }
  bytes_.push_back(text.size());
}

size_t CodePoints::byte(int64_t i) const {
  const auto n = static_cast<int64_t>(cps_.size());
  if (i < 0) i = std::max<int64_t>(0, n + i);
  return bytes_[static_cast<size_t>(std::min(i, n))];
}

std::string CodePoints::slice(int64_t start, int64_t end) const {
  const size_t b = byte(start), e = byte(end);
  return e > b ? std::string(text_.substr(b, e - b)) : std::string();
}

void softmax(const float* x, size_t n, float* out) {
  if (n == 0) return;
  const float max = *std::max_element(x, x + n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - max);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(std::exp(static_cast<double>(x[i]) - max) / sum);
}

size_t model_max_length(const ModelConfig& config) {
  return static_cast<size_t>(std::max<int64_t>(0, config.max_sequence_length()));
}

size_t truncation_length(const ModelConfig& config, const Tokenizer& tokenizer) {
  const size_t positions = model_max_length(config);
  return std::min(positions, tokenizer.model_max_length().value_or(positions));
}

void in_length_order(size_t n, const std::function<PreparedText(size_t)>& prepare, size_t batch_size,
                     std::vector<size_t>* truncated,
                     const std::function<void(std::span<const PreparedText>, std::span<const size_t>)>& run) {
  std::vector<PreparedText> prepared(n);
  for (size_t i = 0; i < n; ++i) {
    try {
      prepared[i] = prepare(i);
    } catch (const Error& err) {
      throw err.about_input(i);
    }
    if (prepared[i].truncated && truncated) truncated->push_back(i);
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return prepared[a].ids.size() > prepared[b].ids.size(); });
  batch_size = std::max<size_t>(1, batch_size);
  std::vector<PreparedText> batch;
  for (size_t start = 0; start < n; start += batch_size) {
    const size_t end = std::min(n, start + batch_size);
    batch.clear();
    for (size_t i = start; i < end; ++i) batch.push_back(std::move(prepared[order[i]]));
    run(batch, std::span<const size_t>(order).subspan(start, end - start));
  }
}

void in_passes(std::span<const Encoding> encodings, const std::function<void(const Batch&, size_t first)>& run) {
  for (size_t i = 0; i < encodings.size();) {
    const size_t first = i;
    Batch batch;
    size_t tokens = 0;
    while (i < encodings.size() && (i == first || tokens + encodings[i].ids.size() <= kTokensPerPass)) {
      batch.add_sequence(encodings[i].ids);
      tokens += encodings[i++].ids.size();
    }
    run(batch, first);
  }
}

Matrix sequence_logits(const Model& model, std::span<const Encoding> encodings) {
  Matrix out(encodings.size(), static_cast<size_t>(model.config().num_labels()));
  in_passes(encodings, [&](const Batch& batch, size_t first) {
    const Matrix part = batch_sequence_logits(model, batch);
    std::copy(part.data.begin(), part.data.end(), out.row(first));
  });
  return out;
}

Matrix batch_sequence_logits(const Model& model, const Batch& batch) {
  if (batch.num_sequences() == 0) return Matrix(0, static_cast<size_t>(model.config().num_labels()));
  ForwardOptions fo;
  fo.sequence_logits = true;
  Outputs out = model.forward(batch, fo);
  return std::move(out.sequence_logits);
}

namespace {
bool python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
}  // namespace

// Scans only the ends (an invalid sequence ends the scan, as a non-space character does).
std::string python_strip(std::string_view text) {
  size_t b = 0, e = text.size();
  while (b < e && unicode::valid_sequence_length(text, b) != 0) {
    size_t next = b;
    if (!python_space(unicode::next_code_point(text, next))) break;
    b = next;
  }
  while (e > b) {
    size_t start = e - 1;  // the first byte of the last sequence: back over up to 3 continuation bytes
    while (start > b && e - start < 4 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    if (unicode::valid_sequence_length(text, start) != e - start) break;
    size_t next = start;
    if (!python_space(unicode::next_code_point(text, next))) break;
    e = start;
  }
  return std::string(text.substr(b, e - b));
}

const Model& require_model(const std::optional<Model>& model, const char* pipeline) {
  if (!model)
    throw Error(std::string(pipeline) + " was made from a tokenizer and a config only: it has no model to run",
                ErrorKind::kInvalidModel);
  return *model;
}

}  // namespace roberta::pipeline
