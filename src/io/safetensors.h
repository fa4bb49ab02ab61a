// Memory-mapped safetensors files (https://github.com/huggingface/safetensors, format: an 8-byte
// little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, then the data).
// Every header is validated before any tensor is used: length within the file, offsets in range,
// sizes matching shape x dtype, no two tensors overlapping.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace tessera {

struct TensorInfo {
  std::string name;        // as stored in the file
  std::string dtype_name;  // "F32", "BF16", ... as stored
  bool dtype_known = false;
  DType dtype = DType::f32;  // valid when dtype_known
  std::vector<int64_t> shape;
  const void* data = nullptr;  // into the mapping
  size_t nbytes = 0;
  std::string file;  // path of the shard holding it

  int64_t numel() const;
  std::string shape_str() const;
};

class SafetensorsFile {
 public:
  // Maps and validates `path`; throws Error(invalid_model / io) naming the file on any problem.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  size_t file_size() const { return size_; }

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, TensorInfo> tensors_;
};

// Writes tensors as one safetensors file (used by make-model and the tests).
struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void* data;
};
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace tessera
