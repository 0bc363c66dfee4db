#pragma once
// NumPy .npy files (format 1.0/2.0/3.0, C order, little-endian) for reference dumps.
//
//   roberta::NpyArray a = roberta::read_npy("dump/hidden_states_0.npy");   // a.shape, a.as_float()
//   roberta::write_npy("out/logits.npy", {2, 5, 50265}, values);
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace roberta {

struct NpyArray {
  std::string dtype;  // numpy descr, e.g. "<f4", "<i8"
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  std::string name;  // where it came from (the file), for messages

  int64_t numel() const;
  std::vector<float> as_float() const;    // from f4/f8
  std::vector<int64_t> as_int64() const;  // from i1/i2/i4/i8/u1/b1
};

NpyArray read_npy(const std::filesystem::path& path);
// Writes a version-1.0 header of fixed size (128 bytes for shapes up to ~60 digits), so that a
// streamed file can get its final shape by rewriting the header in place.
void write_npy_header(std::ostream& out, const std::string& descr, const std::vector<int64_t>& shape);
// Parses the bytes of a .npy file (`name` is used in messages).
NpyArray parse_npy(std::string_view bytes, const std::string& name);
void write_npy(const std::filesystem::path& path, const std::vector<int64_t>& shape, const std::vector<float>& values);
void write_npy(const std::filesystem::path& path, const std::vector<int64_t>& shape, const std::vector<int64_t>& values);

}  // namespace roberta
