#pragma once
// Embeddings in a lower precision, as sentence-transformers 6's quantize_embeddings makes them:
// int8 / uint8 (each dimension cut into 255 steps between its low and high value) or binary /
// ubinary (the signs, packed eight to a byte).
//
//   roberta::Matrix e = embed(texts);                                   // (N, D) float
//   roberta::QuantizedMatrix q = roberta::quantize_embeddings(e, roberta::Precision::kUbinary);
//   q.row(0)                                                            // (D + 7) / 8 bytes
//   roberta::QuantizeRanges r = roberta::QuantizeRanges::of(e);   // or of a calibration set
//   roberta::quantize_embeddings(e, roberta::Precision::kInt8, &r);
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "roberta/model.h"

namespace roberta {

enum class Precision { kFloat32, kInt8, kUint8, kBinary, kUbinary };
// "float32", "int8", "uint8", "binary", "ubinary"; an Error naming them for anything else.
Precision parse_precision(const std::string& name);
const char* precision_name(Precision p);
bool is_signed(Precision p);  // int8, binary: the bytes are int8 values

// Each dimension's low and high value (D each): the int8 / uint8 buckets.
struct QuantizeRanges {
  std::vector<float> low, high;
  // The minimum and maximum of each column of e (sentence-transformers' calibration_embeddings).
  static QuantizeRanges of(const Matrix& e);
};

// Quantized rows: rows x cols bytes, row-major; int8 and binary values stored as their two's
// complement bytes.
struct QuantizedMatrix {
  size_t rows = 0, cols = 0;
  Precision precision = Precision::kUint8;
  std::vector<uint8_t> data{};
  const uint8_t* row(size_t r) const { return data.data() + r * cols; }
};

// e (N, D) quantized: int8 / uint8 with the buckets of `ranges` (D values each; null: the ranges of
// e itself), bucket floor((x - low) / step) with step (high - low) / 255 (1 where that is 0),
// clipped to 0..255, int8 the bucket minus 128; ubinary the bits x > 0, first dimension in the
// high bit, (D + 7) / 8 bytes; binary those bytes minus 128. Throws Error for kFloat32 or ranges of
// another dimension.
QuantizedMatrix quantize_embeddings(const Matrix& e, Precision precision, const QuantizeRanges* ranges = nullptr);

}  // namespace roberta
