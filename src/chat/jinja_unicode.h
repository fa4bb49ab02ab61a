// UTF-8 helpers for the chat-template interpreter: Python strings are sequences of code points,
// so lengths, indices, slices and case changes work on decoded text.
#pragma once

#include <string>

namespace tessera::jinja {

// Invalid bytes decode to U+DC80..U+DCFF (like Python's surrogateescape) and encode back to the
// same byte, so any input round-trips.
std::u32string utf8_decode(const std::string& s);
std::string utf8_encode(const std::u32string& s);
void utf8_append(std::string& out, char32_t c);
size_t utf8_length(const std::string& s);  // number of code points

bool py_isspace(char32_t c);  // str.isspace() for one code point
char32_t py_lower(char32_t c);
char32_t py_upper(char32_t c);
char32_t py_title(char32_t c);
bool py_isalpha(char32_t c);
bool py_isdigit(char32_t c);
bool py_isalnum(char32_t c);
bool py_islower(char32_t c);
bool py_isupper(char32_t c);

std::string py_strip(const std::string& s, bool left, bool right);  // whitespace
std::string py_strip_chars(const std::string& s, const std::string& chars, bool left, bool right);
std::string py_lower(const std::string& s);
std::string py_upper(const std::string& s);

}  // namespace tessera::jinja
