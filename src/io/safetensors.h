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
#include "core/ggml_type.h"

namespace tessera {

// One tensor of a checkpoint file: a safetensors entry, or a GGUF tensor (io/gguf_model.cpp).
struct TensorInfo {
  std::string name;        // as stored in the file
  std::string dtype_name;  // "F32", "BF16", "Q4_K", ... as stored
  bool dtype_known = false;
  DType dtype = DType::f32;  // valid when dtype_known
  // A GGUF block type (Q4_0, Q4_K, ...: rows of ggml blocks, quant/gguf_blocks.h), with
  // dtype_known false; null for plain dtypes.
  const GgmlTypeInfo* ggml = nullptr;
  uint32_t ggml_type = 0;  // its id, when ggml is set
  std::vector<int64_t> shape;
  const void* data = nullptr;  // into the mapping
  bool mapped = false;         // data is a read-only file mapping (release_pages may drop it)
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
  // Drops the mapping's resident pages (madvise MADV_DONTNEED): once the backend holds its own
  // copy of the weights they only add to the process's RSS. Safe while views are still in use:
  // the mapping is read-only and private, so a later read faults the page back in from the file.
  void release_pages() const;

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
// The resident pages wholly inside t's bytes dropped (madvise MADV_DONTNEED), as
// SafetensorsFile::release_pages does for a whole file: the loader calls it once a tensor is
// uploaded, so that the file's pages and the backend's copy are not both resident while a model
// loads (the peak RSS of a CPU load was about file + copy).
void release_pages(const TensorInfo& t);

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace tessera
