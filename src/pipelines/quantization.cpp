#include "roberta/quantization.h"

#include <algorithm>
#include <cmath>

#include "roberta/error.h"

namespace roberta {

Precision parse_precision(const std::string& name) {
  for (Precision p : {Precision::kFloat32, Precision::kInt8, Precision::kUint8, Precision::kBinary, Precision::kUbinary})
    if (name == precision_name(p)) return p;
  throw Error("precision \"" + name + "\" is not one of float32, int8, uint8, binary, ubinary");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFloat32: return "float32";
    case Precision::kInt8: return "int8";
    case Precision::kUint8: return "uint8";
    case Precision::kBinary: return "binary";
    case Precision::kUbinary: return "ubinary";
  }
  return "?";
}

bool is_signed(Precision p) { return p == Precision::kInt8 || p == Precision::kBinary; }

QuantizeRanges QuantizeRanges::of(const Matrix& e) {
  QuantizeRanges r;
  if (e.rows == 0) return r;
  r.low.assign(e.row(0), e.row(0) + e.cols);
  r.high = r.low;
  for (size_t i = 1; i < e.rows; ++i)
    for (size_t d = 0; d < e.cols; ++d) {
      r.low[d] = std::min(r.low[d], e.row(i)[d]);
      r.high[d] = std::max(r.high[d], e.row(i)[d]);
    }
  return r;
}

QuantizedMatrix quantize_embeddings(const Matrix& e, Precision precision, const QuantizeRanges* ranges) {
  QuantizedMatrix q;
  q.precision = precision;
  q.rows = e.rows;
  if (precision == Precision::kFloat32) throw Error("quantize_embeddings: float32 is not a quantized precision");
  if (precision == Precision::kBinary || precision == Precision::kUbinary) {
    q.cols = (e.cols + 7) / 8;
    q.data.assign(q.rows * q.cols, 0);
    const uint8_t offset = precision == Precision::kBinary ? 128 : 0;
    for (size_t i = 0; i < e.rows; ++i) {
      uint8_t* out = q.data.data() + i * q.cols;
      for (size_t d = 0; d < e.cols; ++d)
        if (e.row(i)[d] > 0) out[d / 8] = static_cast<uint8_t>(out[d / 8] | (0x80u >> (d % 8)));
      for (size_t b = 0; b < q.cols; ++b) out[b] = static_cast<uint8_t>(out[b] - offset);  // (x - 128) as int8
    }
    return q;
  }
  const QuantizeRanges own = ranges ? QuantizeRanges{} : QuantizeRanges::of(e);
  const QuantizeRanges& r = ranges ? *ranges : own;
  if (e.rows && (r.low.size() != e.cols || r.high.size() != e.cols))
    throw Error("quantization ranges hold " + std::to_string(r.low.size()) + " and " + std::to_string(r.high.size()) +
                " values; the embeddings have " + std::to_string(e.cols) + " dimensions");
  q.cols = e.cols;
  q.data.resize(q.rows * q.cols);
  for (size_t d = 0; d < e.cols; ++d) {
    float step = (r.high[d] - r.low[d]) / 255.0f;  // float32 throughout, as numpy on float32 arrays
    if (step == 0) step = 1;
    for (size_t i = 0; i < e.rows; ++i) {
      const float bucket = std::clamp(std::floor((e.row(i)[d] - r.low[d]) / step), 0.0f, 255.0f);
      const auto u = static_cast<uint8_t>(bucket);
      q.data[i * q.cols + d] = precision == Precision::kInt8 ? static_cast<uint8_t>(u - 128) : u;
    }
  }
  return q;
}

}  // namespace roberta
