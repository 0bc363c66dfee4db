#pragma once
// Reads safetensors checkpoints (one file, or shards listed by model.safetensors.index.json).
// Files are memory-mapped; every header is validated before any data is touched.
//
//   roberta::WeightStore w = roberta::WeightStore::open_dir("models/demo");
//   if (const roberta::TensorInfo* t = w.find("roberta.embeddings.word_embeddings.weight")) ...
//   std::vector<float> values = w.to_float(*t);   // F16/BF16/F64 converted, F32 copied
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace roberta {

// Every dtype of the safetensors format; only F64, F32, F16 and BF16 can be read as weights.
enum class DType {
  kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU64, kU32, kU16, kU8, kBool,
  kF8E4M3, kF8E5M2, kF8E4M3FNUZ, kF8E5M2FNUZ, kF8E8M0, kF6E2M3, kF6E3M2, kF4, kC64
};
const char* dtype_name(DType d);
size_t dtype_bits(DType d);
size_t dtype_size(DType d);  // bytes a value, rounded up (F4, F6: 1)

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // inside the mapped file
  size_t nbytes = 0;
  std::string file;  // which file it came from (for messages)
  int64_t numel() const;
};

class MappedFile;

class WeightStore {
 public:
  // model.safetensors, or the shards named by model.safetensors.index.json.
  static WeightStore open_dir(const std::filesystem::path& dir);
  static WeightStore open_file(const std::filesystem::path& file);
  // Parses a safetensors image held in memory (`name` is used in messages).
  static WeightStore from_bytes(const std::string& name, std::vector<uint8_t> bytes);

  const TensorInfo* find(const std::string& name) const;
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  std::vector<std::string> files() const;
  size_t total_bytes() const;

  // The tensor's values as float32 (an error for non-float dtypes).
  std::vector<float> to_float(const TensorInfo& t) const;
  // How many of the tensor's values are NaN or infinite read as float32 (an F64 value past float's
  // range counts), and the index of the first in *first when there is one; 0 for other dtypes.
  size_t count_non_finite(const TensorInfo& t, size_t* first = nullptr) const;
  // Pointer to the float32 data in place when the tensor is F32 and 4-byte aligned, else nullptr.
  static const float* f32_in_place(const TensorInfo& t);
  // Tells the kernel the tensor's pages of a mapped file are not needed now (they are read again
  // from the file if touched later). Does nothing for a tensor held in memory (from_bytes), whose
  // pages could not be read back; returns whether pages were released.
  bool release_pages(const TensorInfo& t) const;

 private:
  void add_file(const std::filesystem::path& file);
  void add_file(std::shared_ptr<MappedFile> file);
  std::vector<std::shared_ptr<MappedFile>> files_;
  std::map<std::string, TensorInfo> tensors_;
};

}  // namespace roberta
