// A small GGUF writer for the reader's tests: any metadata, any tensor infos (offsets computed
// and aligned, or forced), and raw access to the bytes so a test can corrupt them. Layout as in
// io/gguf.h (ref: llama.cpp ggml/docs/gguf.md, gguf-py GGUFWriter). No padding follows the last
// tensor, so every strict prefix of a file with data is truncated somewhere.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "io/gguf.h"

namespace tessera::test {

template <typename T>
void put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  s.append(b, sizeof(T));
}
inline void put_str(std::string& s, const std::string& v) {
  put<uint64_t>(s, v.size());
  s += v;
}

struct GgufBuilder {
  struct Kv {
    std::string key;
    uint32_t type;
    std::string payload;  // the encoded value after the type
  };
  struct Tensor {
    std::string name;
    uint32_t type;
    std::vector<int64_t> ne;
    std::string data;
    std::optional<uint64_t> offset;  // forced (else the next aligned offset)
  };
  uint32_t version = 3;
  uint32_t alignment = 32;  // used for the layout; write the key with align()
  std::vector<Kv> kvs;
  std::vector<Tensor> tensors;

  GgufBuilder& raw(const std::string& key, GgufValueType t, const std::string& payload) {
    kvs.push_back({key, static_cast<uint32_t>(t), payload});
    return *this;
  }
  template <typename T>
  GgufBuilder& scalar(const std::string& key, GgufValueType t, T v) {
    std::string p;
    put<T>(p, v);
    return raw(key, t, p);
  }
  GgufBuilder& str(const std::string& key, const std::string& v) {
    std::string p;
    put_str(p, v);
    return raw(key, GgufValueType::string, p);
  }
  template <typename T>
  GgufBuilder& array(const std::string& key, GgufValueType elem, const std::vector<T>& v) {
    std::string p;
    put<uint32_t>(p, static_cast<uint32_t>(elem));
    put<uint64_t>(p, v.size());
    for (const T& x : v) put<T>(p, x);
    return raw(key, GgufValueType::array, p);
  }
  GgufBuilder& strings(const std::string& key, const std::vector<std::string>& v) {
    std::string p;
    put<uint32_t>(p, static_cast<uint32_t>(GgufValueType::string));
    put<uint64_t>(p, v.size());
    for (const auto& x : v) put_str(p, x);
    return raw(key, GgufValueType::array, p);
  }
  GgufBuilder& align(uint32_t a) {
    alignment = a;
    return scalar<uint32_t>("general.alignment", GgufValueType::u32, a);
  }
  // A tensor of ggml type `type` with ne (fastest first) and its bytes (zeros of the right size
  // by default).
  GgufBuilder& tensor(const std::string& name, uint32_t type, std::vector<int64_t> ne,
                      std::string data = {}, std::optional<uint64_t> offset = {}) {
    if (data.empty()) {
      const GgmlTypeInfo* i = ggml_type_info(type);
      int64_t n = 1;
      for (int64_t d : ne) n *= d;
      if (i) data.assign(static_cast<size_t>(n / i->block * i->block_bytes), '\0');
    }
    tensors.push_back({name, type, std::move(ne), std::move(data), offset});
    return *this;
  }

  std::string build() const {
    std::string s = "GGUF";
    put<uint32_t>(s, version);
    put<uint64_t>(s, tensors.size());
    put<uint64_t>(s, kvs.size());
    for (const Kv& kv : kvs) {
      put_str(s, kv.key);
      put<uint32_t>(s, kv.type);
      s += kv.payload;
    }
    std::vector<uint64_t> offsets;
    uint64_t next = 0;
    for (const Tensor& t : tensors) {
      offsets.push_back(t.offset ? *t.offset : next);
      next = (offsets.back() + t.data.size() + alignment - 1) / alignment * alignment;
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      put_str(s, t.name);
      put<uint32_t>(s, static_cast<uint32_t>(t.ne.size()));
      for (int64_t d : t.ne) put<int64_t>(s, d);
      put<uint32_t>(s, t.type);
      put<uint64_t>(s, offsets[i]);
    }
    if (tensors.empty()) return s;
    s.append((alignment - s.size() % alignment) % alignment, '\0');
    const size_t data0 = s.size();
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (offsets[i] > s.size() - data0 + (1u << 20)) continue;  // far out of range: not written
      if (s.size() < data0 + offsets[i]) s.resize(data0 + offsets[i], '\0');
      if (s.size() > data0 + offsets[i]) {  // a forced, overlapping offset: overwrite in place
        s.resize(std::max(s.size(), data0 + offsets[i] + tensors[i].data.size()), '\0');
        s.replace(data0 + offsets[i], tensors[i].data.size(), tensors[i].data);
      } else {
        s += tensors[i].data;
      }
    }
    return s;
  }
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace tessera::test
