// safetensors files: values in place and converted, hostile headers, releasing mapped pages.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "roberta/dev/weights.h"
#include "roberta/error.h"
#include "test_util.h"

namespace {

using roberta::test::expect_error;
using roberta::test::TempDir;

struct StTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  size_t begin, end;
};

void write_safetensors(const std::filesystem::path& path, const std::vector<StTensor>& tensors, const std::string& data,
                       std::optional<uint64_t> header_len_override = std::nullopt, std::string raw_header = "") {
  if (raw_header.empty()) {
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    for (const auto& t : tensors) h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
    raw_header = h.dump();
  }
  while (raw_header.size() % 8) raw_header += ' ';
  const uint64_t len = header_len_override.value_or(raw_header.size());
  std::string file(8, '\0');
  std::memcpy(file.data(), &len, 8);
  roberta::test::write_text(path, file + raw_header + data);
}

// count_non_finite: NaNs and infinities of each float dtype as float32 would read them (an F64
// value past float's range counts, 3e38 does not; F16's largest value, 65504, does not), the first
// one's index; integer tensors have none.
TEST(SafeTensors, CountsNonFiniteValuesOfEachFloatDtype) {
  TempDir dir;
  const float f32[4] = {1.0f, std::numeric_limits<float>::max(), -std::numeric_limits<float>::infinity(),
                        std::bit_cast<float>(0x7F800001u)};  // (a signalling NaN)
  const uint16_t f16[4] = {0x7BFF, 0x3C00, 0xFE00, 0x7C00};  // 65504, 1, -NaN, +inf
  const uint16_t bf16[3] = {0x7F7F, 0xFF80, 0x3F80};         // bf16's largest, -inf, 1
  const double f64[4] = {3e38, 1e300, -1e39, std::nan("")};
  const int32_t i32[2] = {0x7F800000, -1};
  std::string data(reinterpret_cast<const char*>(f32), 16);
  data += std::string(reinterpret_cast<const char*>(f16), 8);
  data += std::string(reinterpret_cast<const char*>(bf16), 6);
  data += std::string(reinterpret_cast<const char*>(f64), 32);
  data += std::string(reinterpret_cast<const char*>(i32), 8);
  write_safetensors(dir / "m.safetensors",
                    {{"a", "F32", {2, 2}, 0, 16}, {"b", "F16", {4}, 16, 24}, {"c", "BF16", {3}, 24, 30},
                     {"d", "F64", {4}, 30, 62}, {"e", "I32", {2}, 62, 70}},
                    data);
  const auto store = roberta::WeightStore::open_file(dir / "m.safetensors");
  const std::pair<const char*, std::pair<size_t, size_t>> want[] = {
      {"a", {2, 2}}, {"b", {2, 2}}, {"c", {1, 1}}, {"d", {3, 1}}, {"e", {0, 99}}};
  for (const auto& [name, count_first] : want) {
    size_t first = 99;
    EXPECT_EQ(store.count_non_finite(*store.find(name), &first), count_first.first) << name;
    EXPECT_EQ(first, count_first.second) << name;
  }
  EXPECT_EQ(store.count_non_finite(*store.find("a")), 2u);  // (first not asked for)
}

TEST(SafeTensors, ReadsF32InPlaceAndConvertsF16AndBF16) {
  TempDir dir;
  const float f32[2] = {1.5f, -2.25f};
  const uint16_t f16[3] = {0x3C00, 0xC000, 0x0001};  // 1, -2, smallest subnormal
  const uint16_t bf16[2] = {0x3F80, 0xC0A0};         // 1, -5
  std::string data(reinterpret_cast<const char*>(f32), 8);
  data += std::string(reinterpret_cast<const char*>(f16), 6);
  data += std::string(reinterpret_cast<const char*>(bf16), 4);
  write_safetensors(dir / "m.safetensors",
                    {{"a", "F32", {2}, 0, 8}, {"b", "F16", {3}, 8, 14}, {"c", "BF16", {1, 2}, 14, 18}}, data);
  const auto store = roberta::WeightStore::open_file(dir / "m.safetensors");
  const auto* a = store.find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(roberta::WeightStore::f32_in_place(*a), nullptr);
  EXPECT_EQ(roberta::WeightStore::f32_in_place(*a)[1], -2.25f);
  const auto b = store.to_float(*store.find("b"));
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], -2.0f);
  EXPECT_EQ(b[2], std::ldexp(1.0f, -24));
  const auto c = store.to_float(*store.find("c"));
  EXPECT_EQ(c[0], 1.0f);
  EXPECT_EQ(c[1], -5.0f);
}

TEST(SafeTensors, HostileHeadersGiveClearErrors) {
  TempDir dir;
  const std::string data(16, '\0');
  const auto open = [&] { roberta::WeightStore::open_file(dir / "bad.safetensors"); };
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {2}, 0, 8}}, data, uint64_t{1} << 40);
  expect_error(open, {"bad.safetensors", "header length", "larger than the file"});
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {8}, 0, 32}}, data);
  expect_error(open, {"\"a\"", "past the end"});
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {2}, 0, 8}, {"b", "F32", {2}, 4, 12}}, data);
  expect_error(open, {"overlap"});
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {3}, 0, 8}}, data);
  expect_error(open, {"\"a\"", "8 bytes", "need 12"});
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {2}, 8, 0}}, data);
  expect_error(open, {"reversed"});
  write_safetensors(dir / "bad.safetensors", {{"a", "Q4", {2}, 0, 8}}, data);
  expect_error(open, {"dtype", "Q4"});
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {-2}, 0, 8}}, data);
  expect_error(open, {"shape", "negative"});
  write_safetensors(dir / "bad.safetensors", {}, data, std::nullopt,
                    R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})");
  expect_error(open, {"\"a\"", "twice"});
  write_safetensors(dir / "bad.safetensors", {}, data, std::nullopt, "{not json");
  expect_error(open, {"invalid JSON"});
  roberta::test::write_text(dir / "bad.safetensors", "abc");
  expect_error(open, {"too small"});
}

// The format's rule (safetensors' reader refuses otherwise): the tensors' data follow one another
// from byte 0 to the end of the file. A byte slipped in after the header shifts every tensor, which
// read anyway gave NaN weights and "<unk>" predictions.
TEST(SafeTensors, DataMustBeCoveredExactlyByTheTensors) {
  TempDir dir;
  const auto open = [&] { roberta::WeightStore::open_file(dir / "bad.safetensors"); };
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {2}, 0, 8}, {"b", "F32", {2}, 8, 16}},
                    std::string(17, '\0'));
  expect_error(open, {"bad.safetensors", "1 bytes after the last tensor"});
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {2}, 1, 9}, {"b", "F32", {2}, 9, 17}},
                    std::string(17, '\0'));
  expect_error(open, {"bad.safetensors", "bytes 0 to 1", "\"a\"", "not contiguous"});
  write_safetensors(dir / "bad.safetensors", {{"a", "F32", {2}, 0, 8}, {"b", "F32", {2}, 12, 20}},
                    std::string(20, '\0'));
  expect_error(open, {"bytes 8 to 12", "\"b\""});
  write_safetensors(dir / "bad.safetensors", {}, std::string(8, '\0'));
  expect_error(open, {"8 bytes after the last tensor"});
  // An empty tensor takes no bytes where it is, also between two others (safetensors sorts by
  // begin, then end).
  write_safetensors(
      dir / "ok.safetensors",
      {{"b", "F32", {2}, 8, 16}, {"a", "F32", {2}, 0, 8}, {"e", "F32", {0}, 16, 16}, {"m", "F32", {0}, 8, 8}},
      std::string(16, '\0'));
  EXPECT_NO_THROW(roberta::WeightStore::open_file(dir / "ok.safetensors"));
}

// Every dtype of the format loads (a checkpoint may hold unused integer or fp8 tensors); only
// reading one of them as weights is an error.
TEST(SafeTensors, OtherDtypesLoadAndFailOnlyWhenRead) {
  TempDir dir;
  write_safetensors(dir / "m.safetensors",
                    {{"w", "F32", {1}, 0, 4},
                     {"u16", "U16", {2}, 4, 8},
                     {"u32", "U32", {1}, 8, 12},
                     {"u64", "U64", {1}, 12, 20},
                     {"f8", "F8_E4M3", {2}, 20, 22},
                     {"f8b", "F8_E5M2", {2}, 22, 24},
                     {"f8c", "F8_E8M0", {1}, 24, 25},
                     {"f4", "F4", {2}, 25, 26},
                     {"f6", "F6_E2M3", {4}, 26, 29},
                     {"c64", "C64", {1}, 29, 37}},
                    std::string(37, '\0'));
  const auto store = roberta::WeightStore::open_file(dir / "m.safetensors");
  EXPECT_EQ(store.to_float(*store.find("w")).size(), 1u);
  for (const char* name : {"u16", "u32", "u64", "f8", "f8b", "f8c", "f4", "f6", "c64"})
    expect_error([&] { store.to_float(*store.find(name)); }, {"m.safetensors", std::string("\"") + name + "\"", "F32"});
  // F6 packs four values in three bytes: three values do not fill whole bytes.
  write_safetensors(dir / "bad.safetensors", {{"f6", "F6_E3M2", {3}, 0, 3}}, std::string(3, '\0'));
  expect_error([&] { roberta::WeightStore::open_file(dir / "bad.safetensors"); }, {"\"f6\"", "whole bytes"});
}

}  // namespace

namespace {

// Releasing a tensor's pages must never lose its values: a store built from bytes in memory has
// no file to read them back from (regression: madvise(MADV_DONTNEED) zeroed them).
TEST(SafeTensors, ReleasingPagesKeepsTheValues) {
  TempDir dir;
  const size_t n = 16384;  // 64 KiB: several whole pages
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i) + 0.5f;
  const std::string data(reinterpret_cast<const char*>(values.data()), n * sizeof(float));
  write_safetensors(dir / "m.safetensors", {{"w", "F32", {static_cast<int64_t>(n)}, 0, n * 4}}, data);
  std::ifstream in(dir / "m.safetensors", std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});

  const auto heap = roberta::WeightStore::from_bytes("in-memory", bytes);
  const roberta::TensorInfo& t = *heap.find("w");
  EXPECT_FALSE(heap.release_pages(t));
  const auto after = heap.to_float(t);
  EXPECT_EQ(after, values);

  const auto mapped = roberta::WeightStore::open_file(dir / "m.safetensors");
  const roberta::TensorInfo& tm = *mapped.find("w");
  EXPECT_TRUE(mapped.release_pages(tm));
  EXPECT_EQ(mapped.to_float(tm), values);  // read back from the file
}

}  // namespace
