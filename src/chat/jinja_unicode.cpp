#include "chat/jinja_unicode.h"

#include <utf8proc.h>

namespace tessera::jinja {

std::u32string utf8_decode(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out.push_back(c);
      ++i;
      continue;
    }
    int len = 0;
    char32_t cp = 0, min = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    }
    bool ok = len > 0 && i + len <= n;
    for (int k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (ok && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (!ok) {
      out.push_back(0xDC00 + c);  // surrogateescape
      ++i;
      continue;
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

void utf8_append(std::string& out, char32_t c) {
  if (c >= 0xDC80 && c <= 0xDCFF) {  // an escaped invalid byte
    out.push_back(static_cast<char>(c - 0xDC00));
  } else if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string utf8_encode(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

size_t utf8_length(const std::string& s) {
  bool ascii = true;
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) {
      ascii = false;
      break;
    }
  return ascii ? s.size() : utf8_decode(s).size();
}

// CPython's _PyUnicode_IsWhitespace: bidirectional types WS, B, S plus Zs.
bool py_isspace(char32_t c) {
  switch (c) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x1F:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

static bool valid_cp(char32_t c) {
  return c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
}

char32_t py_lower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  return valid_cp(c) ? static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)))
                     : c;
}
char32_t py_upper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  return valid_cp(c) ? static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c)))
                     : c;
}
char32_t py_title(char32_t c) {
  if (c < 0x80) return py_upper(c);
  return valid_cp(c) ? static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c)))
                     : c;
}

static utf8proc_category_t cat(char32_t c) {
  return valid_cp(c) ? utf8proc_category(static_cast<utf8proc_int32_t>(c)) : UTF8PROC_CATEGORY_CN;
}
bool py_isalpha(char32_t c) {
  auto k = cat(c);
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT ||
         k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_LO;
}
bool py_isdigit(char32_t c) {
  return cat(c) == UTF8PROC_CATEGORY_ND;
}
bool py_isalnum(char32_t c) {
  return py_isalpha(c) || py_isdigit(c);
}
bool py_islower(char32_t c) {
  return cat(c) == UTF8PROC_CATEGORY_LL;
}
bool py_isupper(char32_t c) {
  auto k = cat(c);
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LT;
}

std::string py_strip(const std::string& s, bool left, bool right) {
  std::u32string u = utf8_decode(s);
  size_t b = 0, e = u.size();
  if (left)
    while (b < e && py_isspace(u[b])) ++b;
  if (right)
    while (e > b && py_isspace(u[e - 1])) --e;
  return utf8_encode(u.substr(b, e - b));
}

std::string py_strip_chars(const std::string& s, const std::string& chars, bool left, bool right) {
  std::u32string u = utf8_decode(s), set = utf8_decode(chars);
  size_t b = 0, e = u.size();
  if (left)
    while (b < e && set.find(u[b]) != std::u32string::npos) ++b;
  if (right)
    while (e > b && set.find(u[e - 1]) != std::u32string::npos) --e;
  return utf8_encode(u.substr(b, e - b));
}

std::string py_lower(const std::string& s) {
  std::u32string u = utf8_decode(s);
  for (auto& c : u) c = py_lower(c);
  return utf8_encode(u);
}
std::string py_upper(const std::string& s) {
  std::u32string u = utf8_decode(s);
  for (auto& c : u) c = py_upper(c);
  return utf8_encode(u);
}

}  // namespace tessera::jinja
