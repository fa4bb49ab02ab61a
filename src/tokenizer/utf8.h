// UTF-8 and Unicode helpers for the tokenizer: decoding, validation, Rust's lossy conversion, and
// the character classes that Hugging Face tokenizers (Rust) relies on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::tok {

// Byte length of the UTF-8 sequence that starts with `b` (1 for continuation/invalid bytes, so
// that callers always advance).
inline int utf8_len(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xF0) return 4;
  if (b >= 0xE0) return 3;
  if (b >= 0xC0) return 2;
  return 1;
}

// Decodes the code point at s[i] (s must be valid UTF-8) and advances i past it.
inline char32_t next_cp(std::string_view s, size_t& i) {
  unsigned char b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) {
    ++i;
    return b;
  }
  int n = utf8_len(b);
  char32_t cp = b & (0x7F >> n);
  for (int k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
  i += n;
  return cp;
}

// Decodes the code point that ends just before s[i] and moves i back to its start.
inline char32_t prev_cp(std::string_view s, size_t& i) {
  size_t j = i - 1;
  while (j > 0 && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) --j;
  size_t k = j;
  char32_t cp = next_cp(s, k);
  i = j;
  return cp;
}

void append_utf8(std::string& out, char32_t cp);

// Offset of the first byte that makes `s` invalid UTF-8, or npos when it is valid.
size_t find_invalid_utf8(std::string_view s);

// Rust's String::from_utf8_lossy: every maximal invalid subsequence becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);
// Appends the lossy conversion of `bytes` to `out`.
void append_utf8_lossy(std::string& out, std::string_view bytes);

// Rust's char::is_whitespace (the Unicode White_Space property); also what \s matches in
// Oniguruma and in Rust's regex crate.
inline bool is_white_space(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D);
  if (c < 0x85) return false;
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Rust's char::is_numeric: general categories Nd, Nl, No.
bool is_numeric(char32_t c);
// Rust regex's Unicode \w (word character): Alphabetic, marks, decimal numbers, connector
// punctuation and join controls. Used by the added tokens' single_word rule.
bool is_word_char(char32_t c);

// Rust's char::to_lowercase appended to `out` (full mapping: U+0130 becomes "i\u0307").
void append_lowercase(std::string& out, char32_t c);

// "U+00E9" style, for error messages.
std::string cp_name(char32_t c);

}  // namespace tessera::tok
