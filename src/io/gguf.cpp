#include "io/gguf.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/check.h"
#include "io/mapped_file.h"

namespace tessera {

namespace {

constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS

// Little-endian loads from unaligned bytes (the hosts tessera runs on are little-endian).
template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Bytes of one element of a fixed-size value type; 0 for string and array.
size_t fixed_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::u8:
    case GgufValueType::i8:
    case GgufValueType::boolean:
      return 1;
    case GgufValueType::u16:
    case GgufValueType::i16:
      return 2;
    case GgufValueType::u32:
    case GgufValueType::i32:
    case GgufValueType::f32:
      return 4;
    case GgufValueType::u64:
    case GgufValueType::i64:
    case GgufValueType::f64:
      return 8;
    case GgufValueType::string:
    case GgufValueType::array:
      return 0;
  }
  return 0;
}

bool is_integer(GgufValueType t) {
  switch (t) {
    case GgufValueType::u8:
    case GgufValueType::i8:
    case GgufValueType::u16:
    case GgufValueType::i16:
    case GgufValueType::u32:
    case GgufValueType::i32:
    case GgufValueType::u64:
    case GgufValueType::i64:
      return true;
    default:
      return false;
  }
}

// Element i of an integer payload as int64; false when a u64 exceeds its range.
bool integer_at(GgufValueType t, const uint8_t* p, int64_t* out) {
  switch (t) {
    case GgufValueType::u8:
      *out = load<uint8_t>(p);
      return true;
    case GgufValueType::i8:
      *out = load<int8_t>(p);
      return true;
    case GgufValueType::u16:
      *out = load<uint16_t>(p);
      return true;
    case GgufValueType::i16:
      *out = load<int16_t>(p);
      return true;
    case GgufValueType::u32:
      *out = load<uint32_t>(p);
      return true;
    case GgufValueType::i32:
      *out = load<int32_t>(p);
      return true;
    case GgufValueType::i64:
      *out = load<int64_t>(p);
      return true;
    case GgufValueType::u64: {
      const uint64_t u = load<uint64_t>(p);
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
      *out = static_cast<int64_t>(u);
      return true;
    }
    default:
      return false;
  }
}

// A bounds-checked cursor over the mapping: every read names what it reads, so a truncated file
// says where it ends.
struct Cursor {
  const std::string& path;
  const uint8_t* base;
  size_t size;
  size_t pos = 0;

  size_t left() const { return size - pos; }
  [[noreturn]] void truncated(const std::string& what, uint64_t need) const {
    fail_model(path + ": truncated GGUF file: " + what + " at byte " + std::to_string(pos) +
               " needs " + std::to_string(need) + " bytes, " + std::to_string(left()) +
               " are left");
  }
  const uint8_t* take(uint64_t n, const std::string& what) {
    if (n > left()) truncated(what, n);
    const uint8_t* p = base + pos;
    pos += static_cast<size_t>(n);
    return p;
  }
  template <typename T>
  T read(const std::string& what) {
    return load<T>(take(sizeof(T), what));
  }
  std::string_view string(const std::string& what) {
    const uint64_t n = read<uint64_t>(what + " (its length)");
    const uint8_t* p = take(n, what);
    return {reinterpret_cast<const char*>(p), static_cast<size_t>(n)};
  }
};

std::string quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 80)) out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  if (s.size() > 80) out += "...";
  return out + "'";
}

}  // namespace

std::string gguf_value_type_name(uint32_t id) {
  static const char* names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                "bool", "string", "array", "u64", "i64", "f64"};
  if (id < sizeof(names) / sizeof(names[0])) return names[id];
  return "type " + std::to_string(id);
}

int64_t GgufTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

int64_t GgufTensor::rows() const {
  const int64_t r = row_length();
  return r == 0 ? 0 : numel() / r;
}

std::vector<int64_t> GgufTensor::shape() const {
  return {ne.rbegin(), ne.rend()};
}

std::string GgufTensor::shape_str() const {
  std::string s = "[";
  const auto sh = shape();
  for (size_t i = 0; i < sh.size(); ++i) s += (i ? ", " : "") + std::to_string(sh[i]);
  return s + "]";
}

GgufFile::GgufFile(const std::string& path) : path_(path) {
  const FileMapping m = map_file(path, 4, "GGUF", "the magic");
  map_ = m.data;
  size_ = m.size;
  try {
    parse();
  } catch (...) {
    ::munmap(map_, size_);
    map_ = nullptr;
    throw;
  }
}

void GgufFile::release_pages() const {
  if (map_) ::madvise(map_, size_, MADV_DONTNEED);
}

GgufFile::~GgufFile() {
  if (map_) ::munmap(map_, size_);
}

void GgufFile::parse() {
  Cursor c{path_, static_cast<const uint8_t*>(map_), size_};
  const uint8_t* magic = c.take(4, "the magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) {
    std::string got;
    for (int i = 0; i < 4; ++i) {
      static const char hex[] = "0123456789abcdef";
      got += hex[magic[i] >> 4];
      got += hex[magic[i] & 15];
    }
    fail_model(path_ + ": not a GGUF file (bad magic: bytes " + got +
               ", expected 47475546 'GGUF')");
  }
  version_ = c.read<uint32_t>("the version");
  if (version_ != 2 && version_ != 3) {
    // A big-endian file's version reads byte-swapped here (ref: gguf.cpp's same check).
    if ((version_ & 0xffffu) == 0 && version_ != 0)
      fail_model(path_ + ": GGUF version " + std::to_string(version_) +
                 " (is it a big-endian file? only little-endian GGUF is supported)");
    fail_model(path_ + ": unsupported GGUF version " + std::to_string(version_) +
               " (versions 2 and 3 are supported)");
  }
  const uint64_t n_tensors = c.read<uint64_t>("the tensor count");
  const uint64_t n_kv = c.read<uint64_t>("the metadata count");
  // The smallest entries: a key (8-byte length) + type (4) + a 1-byte value; a tensor info with
  // an empty name and no dims: 8 + 4 + 4 + 8. Counts beyond what the bytes left could hold are
  // rejected before anything is read or allocated for them.
  if (n_kv > c.left() / 13)
    fail_model(path_ + ": the header claims " + std::to_string(n_kv) +
               " metadata entries, more than the " + std::to_string(c.left()) +
               " bytes left can hold (a truncated or corrupt file)");
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string at = "metadata entry " + std::to_string(i);
    const std::string key(c.string(at + "'s key"));
    const std::string what = "metadata key " + quoted(key);
    if (values_.count(key)) fail_model(path_ + ": duplicate " + what);
    GgufValue v;
    const uint32_t type = c.read<uint32_t>(what + "'s type");
    if (type > static_cast<uint32_t>(GgufValueType::f64))
      fail_model(path_ + ": " + what + " has unknown value type " + std::to_string(type));
    v.type = static_cast<GgufValueType>(type);
    // Validates one value of type t at the cursor (strings and bools checked), advancing past it.
    auto skip = [&](GgufValueType t, uint64_t n, const std::string& w) {
      if (t == GgufValueType::string) {
        if (n > c.left() / 8)
          fail_model(path_ + ": " + w + " claims " + std::to_string(n) +
                     " strings, more than the " + std::to_string(c.left()) +
                     " bytes left can hold (a truncated or corrupt file)");
        for (uint64_t j = 0; j < n; ++j) c.string(w + " (string " + std::to_string(j) + ")");
        return;
      }
      const size_t es = fixed_size(t);
      if (n > c.left() / es) c.truncated(w, n > UINT64_MAX / es ? UINT64_MAX : n * es);
      const uint8_t* p = c.take(n * es, w);
      if (t == GgufValueType::boolean)
        for (uint64_t j = 0; j < n; ++j)
          if (p[j] > 1)
            fail_model(path_ + ": " + w + " holds the bool byte " + std::to_string(p[j]) +
                       " (a bool is 0 or 1)");
    };
    if (v.type == GgufValueType::array) {
      const uint32_t et = c.read<uint32_t>(what + "'s element type");
      if (et == static_cast<uint32_t>(GgufValueType::array))
        fail_model(path_ + ": " + what + " is an array of arrays (not supported)");
      if (et > static_cast<uint32_t>(GgufValueType::f64))
        fail_model(path_ + ": " + what + " is an array of unknown value type " +
                   std::to_string(et));
      v.elem_type = static_cast<GgufValueType>(et);
      v.count = c.read<uint64_t>(what + "'s element count");
      v.data = c.base + c.pos;
      skip(v.elem_type, v.count, what + " (" + std::to_string(v.count) + " elements)");
      v.nbytes = static_cast<size_t>(c.base + c.pos - v.data);
    } else if (v.type == GgufValueType::string) {
      const std::string_view s = c.string(what + "'s string value");
      v.data = reinterpret_cast<const uint8_t*>(s.data());
      v.count = v.nbytes = s.size();
    } else {
      v.data = c.base + c.pos;
      skip(v.type, 1, what + "'s " + gguf_value_type_name(v.type) + " value");
      v.nbytes = fixed_size(v.type);
    }
    keys_.push_back(key);
    values_.emplace(key, v);
  }
  if (const GgufValue* a = find("general.alignment")) {
    if (a->type != GgufValueType::u32)
      bad_key("general.alignment", "is " + gguf_value_type_name(a->type) + ", expected u32");
    const uint32_t al = load<uint32_t>(a->data);
    if (al == 0 || (al & (al - 1)) != 0)
      bad_key("general.alignment", std::to_string(al) + " is not a power of two");
    alignment_ = al;
  }

  if (n_tensors > c.left() / 24)
    fail_model(path_ + ": the header claims " + std::to_string(n_tensors) +
               " tensors, more than the " + std::to_string(c.left()) +
               " bytes left can hold (a truncated or corrupt file)");
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = std::string(c.string("tensor info " + std::to_string(i) + "'s name"));
    const std::string what = "tensor " + quoted(t.name);
    auto bad = [&](const std::string& why) { fail_model(path_ + ": " + what + " " + why); };
    if (tensor_index_.count(t.name)) fail_model(path_ + ": duplicate " + what);
    const uint32_t n_dims = c.read<uint32_t>(what + "'s dimension count");
    if (n_dims > kMaxDims)
      bad("has " + std::to_string(n_dims) + " dimensions (at most " + std::to_string(kMaxDims) +
          ")");
    int64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const int64_t ne = c.read<int64_t>(what + "'s dimension " + std::to_string(d));
      if (ne < 0) bad("has a negative dimension " + std::to_string(ne));
      t.ne.push_back(ne);
      if (__builtin_mul_overflow(numel, ne, &numel))
        bad("has more elements than an int64 holds (dimensions " + t.shape_str() + ")");
    }
    t.type_id = c.read<uint32_t>(what + "'s type");
    t.type = ggml_type_info(t.type_id);
    if (!t.type) bad("has unknown ggml type id " + std::to_string(t.type_id));
    if (t.row_length() % t.type->block != 0)
      bad("of type " + std::string(t.type->name) + " has rows of " +
          std::to_string(t.row_length()) + " elements, not a multiple of its block size " +
          std::to_string(t.type->block));
    const uint64_t blocks = static_cast<uint64_t>(numel / t.type->block);
    uint64_t nbytes = 0;
    if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(t.type->block_bytes), &nbytes) ||
        nbytes > size_)
      bad("of type " + std::string(t.type->name) + " and shape " + t.shape_str() +
          " is larger than the file");
    t.nbytes = static_cast<size_t>(nbytes);
    t.offset = c.read<uint64_t>(what + "'s data offset");
    if (t.offset % alignment_ != 0)
      bad("has data offset " + std::to_string(t.offset) + ", not a multiple of the alignment " +
          std::to_string(alignment_));
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment (ref: gguf.cpp GGML_PAD).
  const size_t pad = (alignment_ - c.pos % alignment_) % alignment_;
  if (!tensors_.empty() && pad > c.left()) c.truncated("the padding before the data section", pad);
  data_offset_ = std::min(c.pos + pad, size_);
  const size_t data_size = size_ - data_offset_;
  for (GgufTensor& t : tensors_) {
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      fail_model(path_ + ": tensor " + quoted(t.name) + " (" + t.type_name() + " " + t.shape_str() +
                 ", " + std::to_string(t.nbytes) + " bytes at data offset " +
                 std::to_string(t.offset) + ") runs past the end of the file (the data section " +
                 "holds " + std::to_string(data_size) + " bytes; is the file truncated?)");
    t.data = static_cast<const uint8_t*>(map_) + data_offset_ + t.offset;
  }
  std::vector<const GgufTensor*> order;
  for (const GgufTensor& t : tensors_)
    if (t.nbytes) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i)
    if (order[i]->offset < order[i - 1]->offset + order[i - 1]->nbytes)
      fail_model(path_ + ": tensors " + quoted(order[i - 1]->name) + " and " +
                 quoted(order[i]->name) + " overlap in the data section");
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void GgufFile::bad_key(const std::string& key, const std::string& why) const {
  fail_model(path_ + ": metadata key " + quoted(key) + " " + why);
}

const GgufValue& GgufFile::get(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) bad_key(key, "is missing");
  return *v;
}

const GgufValue& GgufFile::typed(const std::string& key, GgufValueType want) const {
  const GgufValue& v = get(key);
  if (v.type != want) {
    const std::string got = v.type == GgufValueType::array
                                ? "an array of " + gguf_value_type_name(v.elem_type)
                                : gguf_value_type_name(v.type);
    bad_key(key, "is " + got + ", expected " + gguf_value_type_name(want));
  }
  return v;
}

uint8_t GgufFile::get_u8(const std::string& k) const {
  return load<uint8_t>(typed(k, GgufValueType::u8).data);
}
int8_t GgufFile::get_i8(const std::string& k) const {
  return load<int8_t>(typed(k, GgufValueType::i8).data);
}
uint16_t GgufFile::get_u16(const std::string& k) const {
  return load<uint16_t>(typed(k, GgufValueType::u16).data);
}
int16_t GgufFile::get_i16(const std::string& k) const {
  return load<int16_t>(typed(k, GgufValueType::i16).data);
}
uint32_t GgufFile::get_u32(const std::string& k) const {
  return load<uint32_t>(typed(k, GgufValueType::u32).data);
}
int32_t GgufFile::get_i32(const std::string& k) const {
  return load<int32_t>(typed(k, GgufValueType::i32).data);
}
uint64_t GgufFile::get_u64(const std::string& k) const {
  return load<uint64_t>(typed(k, GgufValueType::u64).data);
}
int64_t GgufFile::get_i64(const std::string& k) const {
  return load<int64_t>(typed(k, GgufValueType::i64).data);
}
float GgufFile::get_f32(const std::string& k) const {
  return load<float>(typed(k, GgufValueType::f32).data);
}
double GgufFile::get_f64(const std::string& k) const {
  return load<double>(typed(k, GgufValueType::f64).data);
}
bool GgufFile::get_bool(const std::string& k) const {
  return load<uint8_t>(typed(k, GgufValueType::boolean).data) != 0;
}
std::string GgufFile::get_string(const std::string& k) const {
  const GgufValue& v = typed(k, GgufValueType::string);
  return {reinterpret_cast<const char*>(v.data), v.nbytes};
}

int64_t GgufFile::get_int(const std::string& k) const {
  const GgufValue& v = get(k);
  if (!is_integer(v.type))
    bad_key(k, "is " + gguf_value_type_name(v.type) + ", expected an integer");
  int64_t out = 0;
  if (!integer_at(v.type, v.data, &out)) bad_key(k, "is larger than an int64 holds");
  return out;
}
int64_t GgufFile::get_int(const std::string& k, int64_t dflt) const {
  return has(k) ? get_int(k) : dflt;
}
double GgufFile::get_float(const std::string& k) const {
  const GgufValue& v = get(k);
  if (v.type == GgufValueType::f32) return load<float>(v.data);
  if (v.type == GgufValueType::f64) return load<double>(v.data);
  bad_key(k, "is " + gguf_value_type_name(v.type) + ", expected f32 or f64");
}
double GgufFile::get_float(const std::string& k, double dflt) const {
  return has(k) ? get_float(k) : dflt;
}
bool GgufFile::get_bool(const std::string& k, bool dflt) const {
  return has(k) ? get_bool(k) : dflt;
}
std::string GgufFile::get_string(const std::string& k, const std::string& dflt) const {
  return has(k) ? get_string(k) : dflt;
}

GgufValueType GgufFile::array_type(const std::string& k) const {
  return typed(k, GgufValueType::array).elem_type;
}
uint64_t GgufFile::array_size(const std::string& k) const {
  return typed(k, GgufValueType::array).count;
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& k) const {
  const GgufValue& v = typed(k, GgufValueType::array);
  if (!is_integer(v.elem_type))
    bad_key(k, "is an array of " + gguf_value_type_name(v.elem_type) + ", expected integers");
  const size_t es = fixed_size(v.elem_type);
  std::vector<int64_t> out(static_cast<size_t>(v.count));
  for (size_t i = 0; i < out.size(); ++i)
    if (!integer_at(v.elem_type, v.data + i * es, &out[i]))
      bad_key(k, "element " + std::to_string(i) + " is larger than an int64 holds");
  return out;
}

std::vector<float> GgufFile::get_f32_array(const std::string& k) const {
  const GgufValue& v = typed(k, GgufValueType::array);
  if (v.elem_type != GgufValueType::f32 && v.elem_type != GgufValueType::f64)
    bad_key(k, "is an array of " + gguf_value_type_name(v.elem_type) + ", expected f32 or f64");
  std::vector<float> out(static_cast<size_t>(v.count));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = v.elem_type == GgufValueType::f32 ? load<float>(v.data + i * 4)
                                               : static_cast<float>(load<double>(v.data + i * 8));
  return out;
}

std::vector<std::string_view> GgufFile::get_string_array(const std::string& k) const {
  const GgufValue& v = typed(k, GgufValueType::array);
  if (v.elem_type != GgufValueType::string)
    bad_key(k, "is an array of " + gguf_value_type_name(v.elem_type) + ", expected strings");
  // Already validated by parse(); only walked here.
  std::vector<std::string_view> out;
  out.reserve(static_cast<size_t>(v.count));
  const uint8_t* p = v.data;
  for (uint64_t i = 0; i < v.count; ++i) {
    const uint64_t n = load<uint64_t>(p);
    out.emplace_back(reinterpret_cast<const char*>(p + 8), static_cast<size_t>(n));
    p += 8 + n;
  }
  return out;
}

}  // namespace tessera
