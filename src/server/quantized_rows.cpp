// The "precision" of the embedding routes (/embed, /v1/embeddings): finished rows quantized as
// sentence-transformers' quantize_embeddings does (roberta/quantization.h), written as integers or
// base64.
#include "server/handlers.h"

namespace roberta::server {

QuantizeRequest quantize_request(const json& body) {
  QuantizeRequest q;
  if (const auto name = get_string(body, "precision")) {
    try {
      q.precision = parse_precision(*name);
    } catch (const Error& e) {
      throw ApiError(422, ErrorType::kValidation, std::string("`precision`: ") + e.what());
    }
  }
  const json* ranges = field_of(body, "ranges");
  if (!ranges || ranges->is_null()) return q;
  if (q.precision != Precision::kInt8 && q.precision != Precision::kUint8)
    throw ApiError(422, ErrorType::kValidation, "`ranges` go with `precision` int8 or uint8");
  const auto row = [&](size_t i) {
    std::vector<float> v;
    for (const json& x : (*ranges)[i]) {
      if (!x.is_number()) throw ApiError(422, ErrorType::kValidation, "`ranges` must hold numbers");
      v.push_back(x.get<float>());
    }
    return v;
  };
  if (!ranges->is_array() || ranges->size() != 2 || !(*ranges)[0].is_array() || !(*ranges)[1].is_array())
    throw ApiError(422, ErrorType::kValidation, "`ranges` must be [[low, ...], [high, ...]]: one value per dimension");
  q.ranges = QuantizeRanges{row(0), row(1)};
  return q;
}

void check_quantize(const State& s, const QuantizeRequest& q, size_t dimensions) {
  if (q.precision != Precision::kInt8 && q.precision != Precision::kUint8) return;
  const QuantizeRanges* ranges = q.ranges ? &*q.ranges : s.calibration ? &*s.calibration : nullptr;
  if (ranges && (ranges->low.size() != dimensions || ranges->high.size() != dimensions))
    throw ApiError(422, ErrorType::kValidation,
                   std::string(q.ranges ? "`ranges` hold " : "--calibration-embeddings holds ") +
                       std::to_string(ranges->low.size()) + " dimensions; the embeddings have " +
                       std::to_string(dimensions));
}

std::vector<std::string> row_texts(State& s, const QuantizeRequest& q, std::span<const std::span<float>> rows,
                                   bool base64_out) {
  std::vector<std::string> out;
  if (q.precision == Precision::kFloat32) {
    for (const std::span<float> row : rows) {
      std::string text;
      if (base64_out)
        text = "\"" + base64_floats(row.data(), row.size()) + "\"";
      else
        append_floats(text, row.data(), row.size());
      out.push_back(std::move(text));
    }
    return out;
  }
  Matrix m(rows.size(), rows.empty() ? 0 : rows[0].size());
  for (size_t i = 0; i < rows.size(); ++i) std::copy(rows[i].begin(), rows[i].end(), m.row(i));
  // Ranges: the request's, else --calibration-embeddings', else the request's own embeddings'
  // (their dimensions checked by check_quantize before the pass).
  const QuantizeRanges* ranges = q.ranges ? &*q.ranges : s.calibration ? &*s.calibration : nullptr;
  const bool buckets = q.precision == Precision::kInt8 || q.precision == Precision::kUint8;
  const QuantizedMatrix qm = quantize_embeddings(m, q.precision, buckets ? ranges : nullptr);
  for (size_t i = 0; i < qm.rows; ++i) {
    const uint8_t* b = qm.row(i);
    if (base64_out) {
      out.push_back("\"" + base64(std::string_view(reinterpret_cast<const char*>(b), qm.cols)) + "\"");
      continue;
    }
    std::string text = "[";
    for (size_t c = 0; c < qm.cols; ++c) {
      if (c) text += ',';
      text += std::to_string(is_signed(q.precision) ? static_cast<int>(static_cast<int8_t>(b[c])) : static_cast<int>(b[c]));
    }
    out.push_back(text + "]");
  }
  return out;
}

}  // namespace roberta::server
