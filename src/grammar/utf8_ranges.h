// Code point ranges as UTF-8 byte sequences, for lowering character classes to bytes
// (lower.cpp). The algorithm is Rust regex-syntax's Utf8Sequences (utf8.rs): split a range at
// the encoded-length boundaries and wherever its continuation bytes would not span their full
// 0x80-0xBF range, so each piece is one sequence of byte ranges.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::grammar {

struct ByteRange {
  uint8_t lo = 0, hi = 0;
};
using ByteSeq = std::vector<ByteRange>;

// The byte sequences matching exactly the UTF-8 encodings of [lo, hi] (surrogates skipped).
std::vector<ByteSeq> utf8_sequences(uint32_t lo, uint32_t hi);

}  // namespace tessera::grammar
