#include "grammar/utf8_ranges.h"

#include <algorithm>

namespace tessera::grammar {

namespace {

int encode(uint32_t c, uint8_t* out) {
  if (c < 0x80) {
    out[0] = static_cast<uint8_t>(c);
    return 1;
  }
  if (c < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | (c >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | (c >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (c & 0x3F));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xF0 | (c >> 18));
  out[1] = static_cast<uint8_t>(0x80 | ((c >> 12) & 0x3F));
  out[2] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F));
  out[3] = static_cast<uint8_t>(0x80 | (c & 0x3F));
  return 4;
}

// [lo, hi] of one encoded length.
void split(uint32_t lo, uint32_t hi, std::vector<ByteSeq>& out) {
  if (lo > hi) return;
  uint8_t a[4], b[4];
  const int n = encode(lo, a);
  // Split where a continuation byte's range would not be full (utf8.rs, Utf8Sequences::next).
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (uint32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  encode(hi, b);
  ByteSeq s;
  for (int i = 0; i < n; ++i) s.push_back({a[i], b[i]});
  out.push_back(s);
}

}  // namespace

std::vector<ByteSeq> utf8_sequences(uint32_t lo, uint32_t hi) {
  std::vector<ByteSeq> out;
  hi = std::min<uint32_t>(hi, 0x10FFFF);
  // The encoded-length boundaries, and the surrogates, which have no UTF-8 encoding.
  const uint32_t cuts[][2] = {
      {0, 0x7F}, {0x80, 0x7FF}, {0x800, 0xD7FF}, {0xE000, 0xFFFF}, {0x10000, 0x10FFFF}};
  for (const auto& c : cuts) {
    const uint32_t a = std::max(lo, c[0]), b = std::min(hi, c[1]);
    if (a <= b) split(a, b, out);
  }
  return out;
}

}  // namespace tessera::grammar
