#include "roberta/dev/weights.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <sstream>

#include "roberta/error.h"
#include "util/files.h"

namespace roberta {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::kF64: return "F64";
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kI64: return "I64";
    case DType::kI32: return "I32";
    case DType::kI16: return "I16";
    case DType::kI8: return "I8";
    case DType::kU64: return "U64";
    case DType::kU32: return "U32";
    case DType::kU16: return "U16";
    case DType::kU8: return "U8";
    case DType::kBool: return "BOOL";
    case DType::kF8E4M3: return "F8_E4M3";
    case DType::kF8E5M2: return "F8_E5M2";
    case DType::kF8E4M3FNUZ: return "F8_E4M3FNUZ";
    case DType::kF8E5M2FNUZ: return "F8_E5M2FNUZ";
    case DType::kF8E8M0: return "F8_E8M0";
    case DType::kF6E2M3: return "F6_E2M3";
    case DType::kF6E3M2: return "F6_E3M2";
    case DType::kF4: return "F4";
    case DType::kC64: return "C64";
  }
  return "?";
}

size_t dtype_bits(DType d) {
  switch (d) {
    case DType::kF64: case DType::kI64: case DType::kU64: case DType::kC64: return 64;
    case DType::kF32: case DType::kI32: case DType::kU32: return 32;
    case DType::kF16: case DType::kBF16: case DType::kI16: case DType::kU16: return 16;
    case DType::kF6E2M3: case DType::kF6E3M2: return 6;
    case DType::kF4: return 4;
    default: return 8;
  }
}

size_t dtype_size(DType d) { return (dtype_bits(d) + 7) / 8; }

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) : path_(path.string()) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw Error(path_ + ": cannot open file: " + std::strerror(errno), ErrorKind::kIo);
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw Error(path_ + ": not a regular file", ErrorKind::kIo);
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
      if (p == MAP_FAILED) {
        ::close(fd_);
        throw Error(path_ + ": mmap failed: " + std::strerror(errno), ErrorKind::kIo);
      }
      data_ = static_cast<const uint8_t*>(p);
    }
  }
  ~MappedFile() {
    if (data_ && buffer_.empty() && fd_ >= 0) ::munmap(const_cast<uint8_t*>(data_), size_);
    if (fd_ >= 0) ::close(fd_);
  }
  // An in-memory "file" (a copy of `bytes`), for tests and fuzzing.
  MappedFile(std::string name, std::vector<uint8_t> bytes) : path_(std::move(name)), buffer_(std::move(bytes)) {
    data_ = buffer_.data();
    size_ = buffer_.size();
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // A read-only mapping of a file (whose dropped pages are read back), not an in-memory copy.
  bool is_mapped() const { return buffer_.empty() && data_ != nullptr; }

 private:
  std::string path_;
  int fd_ = -1;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::vector<uint8_t> buffer_;
};

namespace {

using json = nlohmann::json;

// What is wrong inside a checkpoint is a model error.
struct ModelError : Error {
  explicit ModelError(const std::string& message) : Error(message, ErrorKind::kInvalidModel) {}
};

DType parse_dtype(const std::string& s, const std::string& where) {
  static const std::pair<const char*, DType> kNames[] = {
      {"F64", DType::kF64}, {"F32", DType::kF32}, {"F16", DType::kF16}, {"BF16", DType::kBF16},
      {"I64", DType::kI64}, {"I32", DType::kI32}, {"I16", DType::kI16}, {"I8", DType::kI8},
      {"U64", DType::kU64}, {"U32", DType::kU32}, {"U16", DType::kU16}, {"U8", DType::kU8},
      {"BOOL", DType::kBool}, {"F8_E4M3", DType::kF8E4M3}, {"F8_E5M2", DType::kF8E5M2},
      {"F8_E4M3FNUZ", DType::kF8E4M3FNUZ}, {"F8_E5M2FNUZ", DType::kF8E5M2FNUZ}, {"F8_E8M0", DType::kF8E8M0},
      {"F6_E2M3", DType::kF6E2M3}, {"F6_E3M2", DType::kF6E3M2}, {"F4", DType::kF4}, {"C64", DType::kC64}};
  for (const auto& [name, d] : kNames)
    if (s == name) return d;
  throw ModelError(where + ": dtype \"" + s + "\" is not supported");
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) mant <<= 1, --exp;
      bits = sign | (exp << 23) | ((mant & 0x3FF) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

void WeightStore::add_file(const std::filesystem::path& path) { add_file(std::make_shared<MappedFile>(path)); }

WeightStore WeightStore::from_bytes(const std::string& name, std::vector<uint8_t> bytes) {
  WeightStore store;
  store.add_file(std::make_shared<MappedFile>(name, std::move(bytes)));
  return store;
}

void WeightStore::add_file(std::shared_ptr<MappedFile> file) {
  const std::string name = file->path();
  if (file->size() < 8) throw ModelError(name + ": too small to be a safetensors file (" + std::to_string(file->size()) + " bytes)");
  uint64_t header_len;
  std::memcpy(&header_len, file->data(), 8);
  if (header_len > file->size() - 8)
    throw ModelError(name + ": header length " + std::to_string(header_len) + " is larger than the file (" +
                std::to_string(file->size()) + " bytes)");
  if (header_len > 100'000'000) throw ModelError(name + ": header length " + std::to_string(header_len) + " is unreasonably large");
  const char* header_begin = reinterpret_cast<const char*>(file->data() + 8);
  // Reject duplicate names, which a plain JSON parse would silently merge.
  std::set<std::string> seen;
  std::string duplicate;
  json header;
  try {
    header = json::parse(header_begin, header_begin + header_len,
                         [&](int depth, json::parse_event_t event, json& parsed) {
                           if (depth == 1 && event == json::parse_event_t::key) {
                             const std::string key = parsed.get<std::string>();
                             if (!seen.insert(key).second && duplicate.empty()) duplicate = key;
                           }
                           return true;
                         });
  } catch (const json::parse_error& e) {
    throw ModelError(name + ": invalid JSON header at byte " + std::to_string(e.byte));
  } catch (const json::exception& e) {
    throw ModelError(name + ": invalid JSON header: " + e.what());
  }
  if (!duplicate.empty()) throw ModelError(name + ": tensor \"" + duplicate + "\" appears twice in the header");
  if (!header.is_object()) throw ModelError(name + ": header is not a JSON object");
  const size_t data_begin = 8 + header_len;
  const size_t data_size = file->size() - data_begin;
  struct Span {
    size_t begin, end;
    std::string tensor;
  };
  std::vector<Span> spans;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") continue;
    const std::string where = name + ": tensor \"" + key + "\"";
    if (!value.is_object() || !value.contains("dtype") || !value.contains("shape") || !value.contains("data_offsets"))
      throw ModelError(where + ": expected {dtype, shape, data_offsets}");
    if (!value["dtype"].is_string()) throw ModelError(where + ": dtype must be a string");
    TensorInfo t;
    t.name = key;
    t.file = name;
    t.dtype = parse_dtype(value["dtype"], where);
    const json& shape = value["shape"];
    if (!shape.is_array() || shape.size() > 8) throw ModelError(where + ": shape must be an array of at most 8 dimensions");
    uint64_t numel = 1;
    for (const json& d : shape) {
      if (!d.is_number_unsigned()) throw ModelError(where + ": shape " + shape.dump() + " has a negative or non-integer dimension");
      const uint64_t v = d.get<uint64_t>();
      if (v > (uint64_t{1} << 40) || (v > 0 && numel > (uint64_t{1} << 40) / v))
        throw ModelError(where + ": shape " + shape.dump() + " is too large");
      numel *= v;
      t.shape.push_back(static_cast<int64_t>(v));
    }
    const json& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      throw ModelError(where + ": data_offsets must be two non-negative integers");
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end) throw ModelError(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] are reversed");
    if (end > data_size)
      throw ModelError(where + ": data_offsets end " + std::to_string(end) + " is past the end of the data (" +
                  std::to_string(data_size) + " bytes)");
    const uint64_t bits = numel * dtype_bits(t.dtype);  // F4 and F6 pack several values a byte
    if (bits % 8 != 0)
      throw ModelError(where + ": dtype " + std::string(dtype_name(t.dtype)) + " and shape " + shape.dump() +
                       " do not fill whole bytes");
    if (end - begin != bits / 8)
      throw ModelError(where + ": " + std::to_string(end - begin) + " bytes of data but dtype " + dtype_name(t.dtype) +
                  " and shape " + shape.dump() + " need " + std::to_string(bits / 8));
    t.data = file->data() + data_begin + begin;
    t.nbytes = end - begin;
    spans.push_back({begin, end, key});
    if (tensors_.count(key)) throw ModelError(where + ": also defined in " + tensors_[key].file);
    tensors_.emplace(key, std::move(t));
  }
  // By (begin, end), as safetensors sorts them: an empty tensor [x, x) comes before one starting at x.
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  // As the format requires (and safetensors' own reader checks): the tensors cover the data exactly,
  // one after another. A gap or trailing bytes mean offsets written wrongly, e.g. every tensor shifted.
  size_t covered = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (i > 0 && spans[i].begin < spans[i - 1].end)
      throw ModelError(name + ": tensors \"" + spans[i - 1].tensor + "\" and \"" + spans[i].tensor + "\" overlap");
    if (spans[i].begin > covered)
      throw ModelError(name + ": bytes " + std::to_string(covered) + " to " + std::to_string(spans[i].begin) +
                       " of the data belong to no tensor (before tensor \"" + spans[i].tensor +
                       "\"): the data offsets are not contiguous");
    covered = spans[i].end;
  }
  if (covered != data_size)
    throw ModelError(name + ": " + std::to_string(data_size - covered) + " bytes after the last tensor's data (" +
                     std::to_string(data_size) + " bytes of data, tensors end at " + std::to_string(covered) +
                     "): the file is longer than its header says");
  files_.push_back(std::move(file));
}

WeightStore WeightStore::open_file(const std::filesystem::path& file) {
  WeightStore store;
  store.add_file(file);
  return store;
}

WeightStore WeightStore::open_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir / "model.safetensors", ec)) return open_file(dir / "model.safetensors");
  const auto index_path = dir / "model.safetensors.index.json";
  if (std::filesystem::exists(index_path, ec)) {
    const json index = util::read_json_file(index_path);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      throw ModelError(index_path.string() + ": missing object \"weight_map\"");
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : index["weight_map"].items()) {
      if (!shard.is_string()) throw ModelError(index_path.string() + ": weight_map[\"" + tensor + "\"] is not a file name");
      const std::string s = shard;
      if (s.empty() || s.find('/') != std::string::npos || s == "..")
        throw ModelError(index_path.string() + ": shard name \"" + s + "\" must be a plain file name");
      shards.insert(s);
    }
    WeightStore store;
    for (const auto& s : shards) store.add_file(dir / s);
    for (const auto& [tensor, shard] : index["weight_map"].items())
      if (!store.tensors_.count(tensor))
        throw ModelError(index_path.string() + ": tensor \"" + tensor + "\" is not in " + shard.get<std::string>());
    return store;
  }
  if (std::filesystem::exists(dir / "pytorch_model.bin", ec))
    throw Error(dir.string() + ": only pytorch_model.bin found; convert it first with "
                               "/usr/bin/python3 tools/convert_checkpoint.py " + dir.string(),
                ErrorKind::kInvalidModel);
  // A missing file, as a missing config.json or tokenizer is: kIo (Python: NotFoundError).
  throw Error(dir.string() + ": no model.safetensors or model.safetensors.index.json found", ErrorKind::kIo);
}

const TensorInfo* WeightStore::find(const std::string& name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<std::string> WeightStore::files() const {
  std::vector<std::string> out;
  for (const auto& f : files_) out.push_back(f->path());
  return out;
}

size_t WeightStore::total_bytes() const {
  size_t n = 0;
  for (const auto& [_, t] : tensors_) n += t.nbytes;
  return n;
}

const float* WeightStore::f32_in_place(const TensorInfo& t) {
  if (t.dtype != DType::kF32 || reinterpret_cast<uintptr_t>(t.data) % alignof(float) != 0) return nullptr;
  return reinterpret_cast<const float*>(t.data);
}

bool WeightStore::release_pages(const TensorInfo& t) const {
  const bool mapped = std::any_of(files_.begin(), files_.end(), [&](const std::shared_ptr<MappedFile>& f) {
    return f->is_mapped() && t.data >= f->data() && t.data + t.nbytes <= f->data() + f->size();
  });
  if (!mapped) return false;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(t.data) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(t.data) + t.nbytes) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  return true;
}

size_t WeightStore::count_non_finite(const TensorInfo& t, size_t* first) const {
  const size_t n = static_cast<size_t>(t.numel());
  // Value i non-finite: its exponent bits all ones (F32, F16, BF16), or not finite as a float (F64).
  const auto count = [&](auto non_finite) {
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i)
      if (non_finite(i)) {
        if (bad++ == 0 && first) *first = i;
      }
    return bad;
  };
  const auto bits16 = [&](size_t i) {
    uint16_t h;
    std::memcpy(&h, t.data + 2 * i, 2);
    return h;
  };
  switch (t.dtype) {
    case DType::kF32:
      return count([&](size_t i) {
        uint32_t b;
        std::memcpy(&b, t.data + 4 * i, 4);
        return (b & 0x7F800000u) == 0x7F800000u;
      });
    case DType::kF16: return count([&](size_t i) { return (bits16(i) & 0x7C00u) == 0x7C00u; });
    case DType::kBF16: return count([&](size_t i) { return (bits16(i) & 0x7F80u) == 0x7F80u; });
    case DType::kF64:
      return count([&](size_t i) {
        double v;
        std::memcpy(&v, t.data + 8 * i, 8);
        return !std::isfinite(static_cast<float>(v));
      });
    default: return 0;
  }
}

std::vector<float> WeightStore::to_float(const TensorInfo& t) const {
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<float> out(n);
  switch (t.dtype) {
    case DType::kF32:
      std::memcpy(out.data(), t.data, n * 4);
      break;
    case DType::kF64:
      for (size_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, t.data + 8 * i, 8);
        out[i] = static_cast<float>(v);
      }
      break;
    case DType::kF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, t.data + 2 * i, 2);
        out[i] = half_to_float(h);
      }
      break;
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, t.data + 2 * i, 2);
        const uint32_t bits = uint32_t{h} << 16;
        std::memcpy(&out[i], &bits, 4);
      }
      break;
    default:
      throw ModelError(t.file + ": tensor \"" + t.name + "\" has dtype " + dtype_name(t.dtype) +
                       ", expected F32, F16, BF16 or F64");
  }
  return out;
}

}  // namespace roberta
