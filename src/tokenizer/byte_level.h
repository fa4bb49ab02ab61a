// GPT-2's reversible byte <-> printable-character mapping used by the ByteLevel pre-tokenizer,
// normalizer and decoder: bytes that are printable Latin-1 map to themselves, the other 68 map to
// U+0100.. in byte order. ref: tokenizers pre_tokenizers/byte_level.rs bytes_char().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::tok {

struct ByteLevelTable {
  char utf8[256][3];  // UTF-8 of the character for each byte
  uint8_t utf8_len[256];
  int16_t byte_of[324];  // code point -> byte, -1 when the character is not in the mapping
  ByteLevelTable();
};

const ByteLevelTable& byte_level_table();

// Appends the byte-level characters of `bytes` to `out`.
void byte_level_encode(std::string_view bytes, std::string& out);

// If every character of `token` is in the mapping, appends the bytes it stands for and returns
// true; otherwise appends nothing and returns false.
bool byte_level_decode(std::string_view token, std::string& out);

}  // namespace tessera::tok
