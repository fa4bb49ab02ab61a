// Memory-mapped GGUF files (llama.cpp's model format; spec: ggml/docs/gguf.md, reader:
// ggml/src/gguf.cpp). Layout, little-endian: magic "GGUF", u32 version (2 or 3: the same layout;
// v1's 32-bit counts are not read), u64 tensor count, u64 metadata count, the metadata (key
// string, u32 value type, value), the tensor infos (name, u32 n_dims, n_dims x i64 ne, u32 ggml
// type, u64 offset), then, padded to `general.alignment` (default 32), the data section the
// offsets count from. A string is a u64 length and its bytes (no terminator); an array is a u32
// element type, a u64 count and the elements.
//
// Everything is validated before the file is used, and a hostile header cannot make the reader
// allocate more than the file's own bytes justify: every count is bounded by the bytes left, and
// values are kept as views into the mapping (strings and arrays are decoded on access).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/ggml_type.h"

namespace tessera {

enum class GgufValueType : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};
// "u32", "string", "array", ...; "type N" for an id outside the enum.
std::string gguf_value_type_name(uint32_t id);
inline std::string gguf_value_type_name(GgufValueType t) {
  return gguf_value_type_name(static_cast<uint32_t>(t));
}

// One metadata value, as a view into the mapping.
struct GgufValue {
  GgufValueType type = GgufValueType::u8;
  GgufValueType elem_type = GgufValueType::u8;  // arrays: the element type (never array)
  uint64_t count = 0;                           // arrays: elements; string: bytes
  const uint8_t* data = nullptr;  // scalar: the value; string: its bytes; array: its first element
  size_t nbytes = 0;              // of the payload at data
};

struct GgufTensor {
  std::string name;
  uint32_t type_id = 0;
  const GgmlTypeInfo* type = nullptr;  // never null once read
  // GGUF's order, fastest-varying first: ne[0] is the row length (ggml's ne; a [rows, cols]
  // PyTorch weight is stored as ne = {cols, rows}).
  std::vector<int64_t> ne;
  uint64_t offset = 0;  // within the data section
  const void* data = nullptr;
  size_t nbytes = 0;

  int64_t numel() const;
  int64_t row_length() const { return ne.empty() ? 1 : ne[0]; }
  int64_t rows() const;                // numel / row_length (1 for a 0-element tensor's view)
  std::vector<int64_t> shape() const;  // ne reversed: row-major, slowest first
  std::string type_name() const { return type ? type->name : "?"; }
  std::string shape_str() const;  // the row-major shape, "[rows, cols]"
};

class GgufFile {
 public:
  // Maps and validates `path`; throws Error(invalid_model, or io for the file itself) naming the
  // file and what is wrong.
  explicit GgufFile(const std::string& path);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  size_t data_offset() const { return data_offset_; }  // of the data section, in the file
  size_t file_size() const { return size_; }

  // Metadata in file order, and by key.
  const std::vector<std::string>& keys() const { return keys_; }
  const GgufValue* find(const std::string& key) const;
  bool has(const std::string& key) const { return find(key) != nullptr; }
  const GgufValue& get(const std::string& key) const;  // throws naming a missing key

  // Typed access: each throws naming the key when it is missing or of another type.
  uint8_t get_u8(const std::string& key) const;
  int8_t get_i8(const std::string& key) const;
  uint16_t get_u16(const std::string& key) const;
  int16_t get_i16(const std::string& key) const;
  uint32_t get_u32(const std::string& key) const;
  int32_t get_i32(const std::string& key) const;
  uint64_t get_u64(const std::string& key) const;
  int64_t get_i64(const std::string& key) const;
  float get_f32(const std::string& key) const;
  double get_f64(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  // Any integer type (converters differ: u32 here, i32 or u64 there), range-checked into int64;
  // any float type as double. The defaulted forms return dflt when the key is absent.
  int64_t get_int(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t dflt) const;
  double get_float(const std::string& key) const;
  double get_float(const std::string& key, double dflt) const;
  bool get_bool(const std::string& key, bool dflt) const;
  std::string get_string(const std::string& key, const std::string& dflt) const;

  // Arrays: the element type and count, then the elements converted (an integer array of any
  // integer element type, a float array of f32 or f64, a string array).
  GgufValueType array_type(const std::string& key) const;
  uint64_t array_size(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;
  std::vector<float> get_f32_array(const std::string& key) const;
  std::vector<std::string_view> get_string_array(const std::string& key) const;  // into the map

  const std::vector<GgufTensor>& tensors() const { return tensors_; }  // in file order
  // Drops the mapping's resident pages (as SafetensorsFile::release_pages).
  void release_pages() const;
  const GgufTensor* find_tensor(const std::string& name) const;

  [[noreturn]] void bad_key(const std::string& key, const std::string& why) const;

 private:
  void parse();
  const GgufValue& typed(const std::string& key, GgufValueType want) const;

  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
  uint32_t version_ = 0;
  size_t alignment_ = 32;
  size_t data_offset_ = 0;
  std::vector<std::string> keys_;
  std::map<std::string, GgufValue, std::less<>> values_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace tessera
