// Open-addressing hash tables for the tokenizer's hot paths: token string -> id (the vocabulary)
// and (left id, right id) -> (rank, merged id) (the BPE merges). Both are built once at load time
// and only read afterwards, so lookups need no locking. std::unordered_map costs an allocation per
// entry, which is most of the load time of a 262k-token / 515k-merge vocabulary.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::tok {

inline uint64_t mix64(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

inline uint64_t hash_bytes(const char* p, size_t n) {
  constexpr uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull;
  uint64_t h = k0 ^ n;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    h = mix64(h ^ v, k1);
    p += 8;
    n -= 8;
  }
  // The last 1-7 bytes without a byte loop (as wyhash does): two overlapping 4-byte reads, or
  // the first, middle and last byte; either covers every byte, so equal-length keys stay apart.
  uint64_t v = 0;
  if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + n - 4, 4);
    v = (static_cast<uint64_t>(a) << 32) | b;
  } else if (n) {
    v = (uint64_t(static_cast<uint8_t>(p[0])) << 16) |
        (uint64_t(static_cast<uint8_t>(p[n >> 1])) << 8) | static_cast<uint8_t>(p[n - 1]);
  }
  return mix64(h ^ v ^ (n << 59), k1 ^ 0x8ebc6af09c88c6e3ull);
}

constexpr size_t kHeadBytes = 16;
struct KeyHead {
  uint64_t w[2];
  bool operator==(const KeyHead& o) const { return w[0] == o.w[0] && w[1] == o.w[1]; }
};
inline KeyHead key_head(std::string_view k) {
  KeyHead h{{0, 0}};
  std::memcpy(h.w, k.data(), k.size() < kHeadBytes ? k.size() : kHeadBytes);
  return h;
}

// A zero-filled array of trivially copyable T, mapped from the kernel: its pages are zeroed
// lazily on first touch (no fill pass over 16 MB tables) and, where THP is in madvise mode,
// backed by 2 MB pages so that random lookups do not miss the TLB. All-zero bytes must mean
// "empty slot" for the tables below.
template <class T>
class ZeroArray {
 public:
  ZeroArray() = default;
  ZeroArray(ZeroArray&& o) noexcept { swap(o); }
  ZeroArray& operator=(ZeroArray&& o) noexcept {
    swap(o);
    return *this;
  }
  ~ZeroArray() { release(); }
  void assign_zero(size_t n) {
    release();
    if (n == 0) return;
    constexpr size_t kHuge = size_t(1) << 21;
    size_t bytes = (n * sizeof(T) + kHuge - 1) & ~(kHuge - 1);
    // Over-map by 2 MB to start on a 2 MB boundary.
    size_t len = bytes + kHuge;
    void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    auto base = reinterpret_cast<uintptr_t>(m);
    uintptr_t aligned = (base + kHuge - 1) & ~(kHuge - 1);
    madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
    map_ = m;
    map_len_ = len;
    p_ = reinterpret_cast<T*>(aligned);
    n_ = n;
  }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }
  const T* begin() const { return p_; }
  const T* end() const { return p_ + n_; }

 private:
  void swap(ZeroArray& o) {
    std::swap(map_, o.map_);
    std::swap(map_len_, o.map_len_);
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
  }
  void release() {
    if (map_) munmap(map_, map_len_);
    map_ = nullptr;
    map_len_ = 0;
    p_ = nullptr;
    n_ = 0;
  }
  void* map_ = nullptr;
  size_t map_len_ = 0;
  T* p_ = nullptr;
  size_t n_ = 0;
};

// String -> int32 map whose keys live in one arena string. Each 32-byte slot also holds the key's
// first 16 bytes, so that most lookups (BPE tokens are short) touch no memory but the slot.
class StringIdMap {
 public:
  void reserve(size_t n, size_t key_bytes) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots_.assign_zero(cap);
    mask_ = cap - 1;
    arena_.reserve(key_bytes);
  }
  // Inserts or overwrites. Returns false when the key already existed (the value is replaced).
  bool insert(std::string_view key, int32_t value) {
    return insert_hashed(key, hash_bytes(key.data(), key.size()), value);
  }
  // Prefetches the slot that insert_hashed(.., h, ..) will look at first.
  void prefetch(uint64_t h) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[h & mask_]);
  }
  bool insert_hashed(std::string_view key, uint64_t h, int32_t value) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    Slot* s = probe(key, h);
    if (s->used()) {
      s->set(value);
      return false;
    }
    s->head = key_head(key);
    s->tag = static_cast<uint32_t>(h >> 32);
    s->off = static_cast<uint32_t>(arena_.size());
    s->len = static_cast<uint32_t>(key.size());
    s->set(value);
    arena_.append(key);
    ++size_;
    return true;
  }
  // The id of `key`, or -1.
  int32_t find(std::string_view key) const {
    if (slots_.empty()) return -1;
    uint64_t h = hash_bytes(key.data(), key.size());
    const Slot* s = const_cast<StringIdMap*>(this)->probe(key, h);
    return s->used() ? s->value() : -1;
  }
  // find() with the hash already computed (see prefetch()).
  int32_t find_hashed(std::string_view key, uint64_t h) const {
    if (slots_.empty()) return -1;
    const Slot* s = const_cast<StringIdMap*>(this)->probe(key, h);
    return s->used() ? s->value() : -1;
  }
  size_t size() const { return size_; }
  // Calls f(key, value) for every entry.
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.used()) f(std::string_view(arena_.data() + s.off, s.len), s.value());
    }
  }

 private:
  struct alignas(32) Slot {  // all zero = empty
    KeyHead head;            // the key's first 16 bytes, zero-padded
    uint32_t off, len;
    uint32_t value_plus_one;  // 0 for an empty slot
    uint32_t tag;             // high half of the hash
    bool used() const { return value_plus_one != 0; }
    int32_t value() const { return static_cast<int32_t>(value_plus_one - 1); }
    void set(int32_t v) { value_plus_one = static_cast<uint32_t>(v) + 1; }
  };
  Slot* probe(std::string_view key, uint64_t h) {
    uint32_t tag = static_cast<uint32_t>(h >> 32);
    KeyHead head = key_head(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!s.used()) return &s;
      if (s.tag == tag && s.len == key.size() && s.head == head &&
          (key.size() <= kHeadBytes ||
           std::memcmp(arena_.data() + s.off + kHeadBytes, key.data() + kHeadBytes,
                       key.size() - kHeadBytes) == 0)) {
        return &s;
      }
    }
  }
  void grow() {
    ZeroArray<Slot> old = std::move(slots_);
    size_t cap = old.empty() ? 16 : old.size() * 2;
    slots_.assign_zero(cap);
    mask_ = cap - 1;
    for (const Slot& s : old) {
      if (!s.used()) continue;
      uint64_t h = hash_bytes(arena_.data() + s.off, s.len);
      size_t i = h & mask_;
      while (slots_[i].used()) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  ZeroArray<Slot> slots_;
  size_t mask_ = 0, size_ = 0;
  std::string arena_;
};

// (left id, right id) -> (rank, merged id), the BPE merge table.
class PairMap {
 public:
  struct Value {
    uint32_t rank;
    int32_t id;
  };
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots_.assign_zero(cap);
    mask_ = cap - 1;
  }
  // Inserts or overwrites (a later duplicate merge wins, as when HF collects them into a map).
  void insert(int32_t a, int32_t b, Value v) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    uint64_t key = pack(a, b);
    size_t i = hash(key) & mask_;
    while (slots_[i].key != 0 && slots_[i].key != key) i = (i + 1) & mask_;
    if (slots_[i].key == 0) ++size_;
    slots_[i] = Slot{key, v};
  }
  void prefetch(int32_t a, int32_t b) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[hash(pack(a, b)) & mask_]);
  }
  const Value* find(int32_t a, int32_t b) const {
    if (slots_.empty()) return nullptr;
    uint64_t key = pack(a, b);
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == 0) return nullptr;
    }
  }
  size_t size() const { return size_; }

 private:
  struct Slot {  // key 0 = empty
    uint64_t key;
    Value value;
  };
  // Never 0: ids are below 2^31.
  static uint64_t pack(int32_t a, int32_t b) {
    return ((static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b)) + 1;
  }
  static uint64_t hash(uint64_t key) { return mix64(key, 0x9E3779B97F4A7C15ull); }
  void grow() {
    ZeroArray<Slot> old = std::move(slots_);
    size_t cap = old.empty() ? 16 : old.size() * 2;
    slots_.assign_zero(cap);
    mask_ = cap - 1;
    for (const Slot& s : old) {
      if (s.key == 0) continue;
      size_t i = hash(s.key) & mask_;
      while (slots_[i].key != 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  ZeroArray<Slot> slots_;
  size_t mask_ = 0, size_ = 0;
};

// A set of (code point, code point) pairs.
class CharPairSet {
 public:
  void insert(char32_t a, char32_t b) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    uint64_t key = pack(a, b);
    size_t i = hash(key) & mask_;
    while (slots_[i] != kEmpty && slots_[i] != key) i = (i + 1) & mask_;
    if (slots_[i] == kEmpty) {
      slots_[i] = key;
      ++size_;
    }
  }
  bool contains(char32_t a, char32_t b) const {
    if (slots_.empty()) return false;
    uint64_t key = pack(a, b);
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i] == key) return true;
      if (slots_[i] == kEmpty) return false;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  static uint64_t pack(char32_t a, char32_t b) { return (uint64_t(a) << 32) | b; }
  static uint64_t hash(uint64_t key) { return mix64(key, 0xD6E8FEB86659FD93ull); }
  void grow() {
    std::vector<uint64_t> old = std::move(slots_);
    size_t cap = old.empty() ? 1024 : old.size() * 2;
    slots_.assign(cap, kEmpty);
    mask_ = cap - 1;
    for (uint64_t k : old) {
      if (k == kEmpty) continue;
      size_t i = hash(k) & mask_;
      while (slots_[i] != kEmpty) i = (i + 1) & mask_;
      slots_[i] = k;
    }
  }
  std::vector<uint64_t> slots_;
  size_t mask_ = 0, size_ = 0;
};

}  // namespace tessera::tok
