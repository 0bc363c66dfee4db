#include "roberta/dev/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "roberta/error.h"

namespace roberta {

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

size_t descr_size(const std::string& d) {
  if (d.size() != 3 || (d[0] != '<' && d[0] != '|')) return 0;
  const char kind = d[1];
  const size_t size = static_cast<size_t>(d[2] - '0');
  if ((kind == 'f' && (size == 4 || size == 8)) || (kind == 'i' && (size == 1 || size == 2 || size == 4 || size == 8)) ||
      (kind == 'u' && size == 1) || (kind == 'b' && size == 1))
    return size;
  return 0;
}

// Value of 'key': ... in the header dict (a Python literal), as raw text.
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  const size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) throw Error(path + ": npy header has no '" + key + "'");
  size_t v = header.find(':', k);
  if (v == std::string::npos) throw Error(path + ": malformed npy header");
  ++v;
  while (v < header.size() && header[v] == ' ') ++v;
  if (v >= header.size()) throw Error(path + ": malformed npy header");
  size_t e = v;
  if (header[v] == '(') {
    e = header.find(')', v);
    if (e == std::string::npos) throw Error(path + ": malformed shape in npy header");
    return header.substr(v, e - v + 1);
  }
  if (header[v] == '\'') {
    e = header.find('\'', v + 1);
    if (e == std::string::npos) throw Error(path + ": malformed npy header");
    return header.substr(v + 1, e - v - 1);
  }
  while (e < header.size() && header[e] != ',' && header[e] != '}') ++e;
  return header.substr(v, e - v);
}

}  // namespace

NpyArray read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open file", ErrorKind::kIo);
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_npy(ss.str(), path.string());
}

NpyArray parse_npy(std::string_view bytes, const std::string& path) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != "\x93NUMPY") throw Error(path + ": not a .npy file");
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])); };
  const uint32_t major = byte(6);
  size_t pos;
  uint32_t header_len;
  if (major == 1) {
    header_len = byte(8) | (byte(9) << 8);
    pos = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error(path + ": truncated header");
    header_len = byte(8) | (byte(9) << 8) | (byte(10) << 16) | (byte(11) << 24);
    pos = 12;
  } else {
    throw Error(path + ": unsupported .npy version " + std::to_string(major));
  }
  if (header_len > bytes.size() - pos) throw Error(path + ": truncated header");
  const std::string header(bytes.substr(pos, header_len));
  pos += header_len;
  NpyArray a;
  a.name = path;
  a.dtype = dict_value(header, "descr", path);
  const size_t item = descr_size(a.dtype);
  if (!item) throw Error(path + ": dtype '" + a.dtype + "' is not supported (little-endian f4/f8/i1-i8/u1/b1)");
  if (dict_value(header, "fortran_order", path).find("False") == std::string::npos)
    throw Error(path + ": Fortran-order arrays are not supported");
  const std::string shape = dict_value(header, "shape", path);
  uint64_t numel = 1;
  for (size_t i = 1; i < shape.size();) {
    while (i < shape.size() && (shape[i] == ' ' || shape[i] == ',')) ++i;
    if (i >= shape.size() || shape[i] == ')') break;
    if (shape[i] < '0' || shape[i] > '9') throw Error(path + ": malformed shape " + shape);
    uint64_t d = 0;
    while (i < shape.size() && shape[i] >= '0' && shape[i] <= '9') {
      d = d * 10 + static_cast<uint64_t>(shape[i] - '0');
      if (d > (uint64_t{1} << 40)) throw Error(path + ": shape " + shape + " is too large");
      ++i;
    }
    if (d > 0 && numel > (uint64_t{1} << 40) / d) throw Error(path + ": shape " + shape + " is too large");
    numel *= d;
    a.shape.push_back(static_cast<int64_t>(d));
  }
  const uint64_t available = bytes.size() - pos;
  if (available / item < numel)
    throw Error(path + ": holds " + std::to_string(available) + " data bytes but shape " + shape + " needs " +
                std::to_string(numel * item));
  a.bytes.assign(bytes.begin() + static_cast<ptrdiff_t>(pos), bytes.begin() + static_cast<ptrdiff_t>(pos + numel * item));
  return a;
}

std::vector<float> NpyArray::as_float() const {
  const size_t n = static_cast<size_t>(numel());
  std::vector<float> out(n);
  if (dtype[1] == 'f' && dtype[2] == '4') {
    if (n > 0) std::memcpy(out.data(), bytes.data(), n * 4);
  } else if (dtype[1] == 'f' && dtype[2] == '8') {
    for (size_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, bytes.data() + 8 * i, 8);
      out[i] = static_cast<float>(v);
    }
  } else {
    throw Error(name + ": dtype " + dtype + " is not a float type");
  }
  return out;
}

std::vector<int64_t> NpyArray::as_int64() const {
  const size_t n = static_cast<size_t>(numel());
  std::vector<int64_t> out(n);
  const size_t item = descr_size(dtype);
  if (dtype[1] == 'f') throw Error(name + ": dtype " + dtype + " is not an integer type");
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = bytes.data() + i * item;
    switch (item) {
      case 1: out[i] = dtype[1] == 'i' ? static_cast<int8_t>(*p) : *p; break;
      case 2: { int16_t v; std::memcpy(&v, p, 2); out[i] = v; break; }
      case 4: { int32_t v; std::memcpy(&v, p, 4); out[i] = v; break; }
      default: std::memcpy(&out[i], p, 8);
    }
  }
  return out;
}

void write_npy_header(std::ostream& out, const std::string& descr, const std::vector<int64_t>& shape) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // A fixed 128-byte header (64 bytes more when the shape needs it) so it can be rewritten in
  // place once the final shape is known; it ends with '\n' as the format requires.
  const size_t total = 10 + dict.size() + 1 <= 128 ? 128 : 192;
  dict.append(total - 10 - dict.size() - 1, ' ');
  dict += '\n';
  const uint16_t len = static_cast<uint16_t>(dict.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xFF), static_cast<char>(len >> 8)};
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(len_bytes, 2);
  out.write(dict.data(), static_cast<std::streamsize>(dict.size()));
}

namespace {
void write_raw(const std::filesystem::path& path, const char* descr, const std::vector<int64_t>& shape, const void* data,
               size_t nbytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path.string() + ": cannot create file", ErrorKind::kIo);
  write_npy_header(out, descr, shape);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(nbytes));
  if (!out) throw Error(path.string() + ": write failed", ErrorKind::kIo);
}
}  // namespace

void write_npy(const std::filesystem::path& path, const std::vector<int64_t>& shape, const std::vector<float>& values) {
  write_raw(path, "<f4", shape, values.data(), values.size() * sizeof(float));
}

void write_npy(const std::filesystem::path& path, const std::vector<int64_t>& shape, const std::vector<int64_t>& values) {
  write_raw(path, "<i8", shape, values.data(), values.size() * sizeof(int64_t));
}

}  // namespace roberta
