#include "io/safetensors.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/json_limits.h"
#include "io/mapped_file.h"

namespace tessera {

using json = nlohmann::json;

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorInfo::shape_str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

bool parse_dtype(const std::string& s, DType* out, size_t* elem) {
  if (s == "F32") {
    *out = DType::f32;
    *elem = 4;
    return true;
  }
  if (s == "BF16") {
    *out = DType::bf16;
    *elem = 2;
    return true;
  }
  if (s == "F16") {
    *out = DType::f16;
    *elem = 2;
    return true;
  }
  if (s == "U32") {  // MLX's packed quantized weights
    *out = DType::u32;
    *elem = 4;
    return true;
  }
  return false;
}

size_t other_dtype_size(const std::string& s) {
  if (s == "F64" || s == "I64" || s == "U64") return 8;
  if (s == "I32") return 4;
  if (s == "I16" || s == "U16") return 2;
  if (s == "I8" || s == "U8" || s == "BOOL" || s == "F8_E4M3" || s == "F8_E5M2") return 1;
  return 0;
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  const FileMapping m = map_file(path, 8, "safetensors", "the 8-byte header length");
  map_ = m.data;
  size_ = m.size;
  try {
    const auto* bytes = static_cast<const uint8_t*>(map_);
    uint64_t header_len = 0;
    std::memcpy(&header_len, bytes, 8);
    if (header_len > size_ - 8) {
      fail_model(path + ": header length " + std::to_string(header_len) +
                 " runs beyond the end of the file (" + std::to_string(size_) + " bytes)");
    }
    json header;
    check_json_depth({reinterpret_cast<const char*>(bytes) + 8, header_len},
                     path + ": the safetensors header", ErrorKind::invalid_model);
    try {
      header = json::parse(bytes + 8, bytes + 8 + header_len);
    } catch (const json::exception& e) {
      fail_model(path + ": the safetensors header is not valid JSON: " + e.what());
    }
    if (!header.is_object()) fail_model(path + ": the safetensors header is not a JSON object");
    const uint8_t* data = bytes + 8 + header_len;
    const size_t data_size = size_ - 8 - header_len;
    std::vector<std::pair<size_t, size_t>> ranges;
    std::vector<std::string> range_names;
    for (auto it = header.begin(); it != header.end(); ++it) {
      if (it.key() == "__metadata__") continue;
      const std::string& name = it.key();
      const json& v = it.value();
      auto bad = [&](const std::string& why) {
        fail_model(path + ": tensor '" + name + "': " + why);
      };
      if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
          !v.contains("data_offsets"))
        bad("header entry lacks dtype, shape or data_offsets");
      if (!v["dtype"].is_string()) bad("dtype is not a string");
      TensorInfo t;
      t.name = name;
      t.file = path;
      t.dtype_name = v["dtype"].get<std::string>();
      size_t elem = 0;
      t.dtype_known = parse_dtype(t.dtype_name, &t.dtype, &elem);
      if (!t.dtype_known) elem = other_dtype_size(t.dtype_name);
      if (elem == 0) bad("unknown dtype '" + t.dtype_name + "'");
      if (!v["shape"].is_array()) bad("shape is not an array");
      for (const auto& d : v["shape"]) {
        if (!d.is_number_unsigned() || d.get<uint64_t>() > INT64_MAX)
          bad("shape has a non-integer, negative or oversized dimension");
        t.shape.push_back(d.get<int64_t>());
      }
      const json& off = v["data_offsets"];
      if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
          !off[1].is_number_unsigned())
        bad("data_offsets is not a pair of non-negative integers");
      size_t b = off[0].get<size_t>(), e = off[1].get<size_t>();
      if (b > e || e > data_size)
        bad("data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
            ") are out of range (the data section holds " + std::to_string(data_size) +
            " bytes; is the file truncated?)");
      // The shape's product in 64 bits, checked: [2^32, 2^32] must not wrap to 0 bytes.
      size_t want = elem;
      for (int64_t d : t.shape)
        if (__builtin_mul_overflow(want, static_cast<size_t>(d), &want))
          bad("shape " + t.shape_str() + " has more elements than 64 bits can count");
      if (e - b != want)
        bad("holds " + std::to_string(e - b) + " bytes but shape " + t.shape_str() + " of " +
            t.dtype_name + " needs " + std::to_string(want));
      t.data = data + b;
      t.mapped = true;
      t.nbytes = e - b;
      ranges.emplace_back(b, e);
      range_names.push_back(name);
      tensors_.emplace(name, std::move(t));
    }
    // Zero-length tensors hold no bytes and overlap nothing: they are left out, so that one
    // sorting between two overlapping tensors cannot hide them from each other. Each range is
    // compared with the one reaching furthest so far, not only its predecessor, which a short
    // tensor inside a long one would otherwise be.
    std::vector<size_t> order;
    for (size_t i = 0; i < ranges.size(); ++i)
      if (ranges[i].second > ranges[i].first) order.push_back(i);
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return ranges[a] < ranges[b]; });
    for (size_t i = 1, furthest = 0; i < order.size(); ++i) {
      if (ranges[order[i]].first < ranges[order[furthest]].second)
        fail_model(path + ": tensors '" + range_names[order[furthest]] + "' and '" +
                   range_names[order[i]] + "' overlap in the data section");
      if (ranges[order[i]].second > ranges[order[furthest]].second) furthest = i;
    }
  } catch (...) {
    ::munmap(map_, size_);
    map_ = nullptr;
    throw;
  }
}

void SafetensorsFile::release_pages() const {
  if (map_) ::madvise(map_, size_, MADV_DONTNEED);
}

void release_pages(const TensorInfo& t) {
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t b = reinterpret_cast<uintptr_t>(t.data), e = b + t.nbytes;
  const uintptr_t b_page = (b + page - 1) / page * page, e_page = e / page * page;
  if (t.mapped && e_page > b_page)  // never anonymous memory: DONTNEED would zero it
    ::madvise(reinterpret_cast<void*>(b_page), e_page - b_page, MADV_DONTNEED);
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, size_);
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const auto& t : tensors) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    size_t bytes = static_cast<size_t>(n) * dtype_size(t.dtype);
    const char* dt = t.dtype == DType::f32    ? "F32"
                     : t.dtype == DType::bf16 ? "BF16"
                     : t.dtype == DType::u32  ? "U32"
                     : t.dtype == DType::i32  ? "I32"
                                              : "F16";
    header[t.name] = {
        {"dtype", dt}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0) h.push_back(' ');  // keep the data 8-byte aligned
  // Written beside the target and renamed over it: a process that has the old file mapped
  // keeps reading the old inode instead of taking SIGBUS when the file is truncated under it.
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail(ErrorKind::io, path + ": cannot create");
    uint64_t len = h.size();
    f.write(reinterpret_cast<const char*>(&len), 8);
    f.write(h.data(), static_cast<std::streamsize>(h.size()));
    for (const auto& t : tensors) {
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      f.write(static_cast<const char*>(t.data),
              static_cast<std::streamsize>(static_cast<size_t>(n) * dtype_size(t.dtype)));
    }
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      fail(ErrorKind::io, path + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail(ErrorKind::io, path + ": cannot replace: " + std::strerror(errno));
  }
}

}  // namespace tessera
