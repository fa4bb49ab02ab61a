#include "chat/jinja_lexer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "chat/jinja_unicode.h"
#include "core/check.h"

namespace tessera::jinja {

void syntax_error(int line, int col, const std::string& msg) {
  fail_model("chat template syntax error at line " + std::to_string(line) + ", column " +
             std::to_string(col) + ": " + msg);
}

namespace {

bool ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Python's str.isspace over a whole (possibly empty) string.
bool all_space(const std::string& s) {
  if (s.empty()) return false;
  for (char32_t c : utf8_decode(s))
    if (!py_isspace(c)) return false;
  return true;
}

// Length of the run of (Python) whitespace starting at s[pos].
size_t space_run(const std::string& s, size_t pos) {
  size_t p = pos;
  while (p < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[p]);
    if (c < 0x80) {
      if (!py_isspace(c)) break;
      ++p;
      continue;
    }
    size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    if (p + len > s.size()) break;
    std::u32string u = utf8_decode(s.substr(p, len));
    if (u.size() != 1 || !py_isspace(u[0])) break;
    p += len;
  }
  return p - pos;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {
    line_starts_.push_back(0);
    for (size_t k = 0; k < src_.size(); ++k)
      if (src_[k] == '\n') line_starts_.push_back(k + 1);
  }

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;
    const size_t n = src_.size();
    while (pos < n) {
      size_t t = find_tag(pos);
      std::string text = src_.substr(pos, (t == std::string::npos ? n : t) - pos);
      if (t == std::string::npos) {
        emit_data(text, pos);
        break;
      }
      char opener = src_[t + 1];
      char mod = t + 2 < n ? src_[t + 2] : '\0';
      if (mod == '-') {
        text = py_strip(text, false, true);
      } else if (opener != '{' && mod != '+') {  // lstrip_blocks for {% and {#
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) && all_space(text.substr(l_pos))) text.resize(l_pos);
      }
      emit_data(text, pos);
      size_t p = t + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      size_t end;  // just past the closing delimiter
      bool strip_after = false, trim = false;
      if (opener == '#' && p >= n) break;  // Jinja ends silently on "{#" at the very end
      if (opener == '#') {
        size_t c = src_.find("#}", p);
        if (c == std::string::npos) syntax_error_at(t, "missing end of comment tag");
        strip_after = c > p && src_[c - 1] == '-';
        trim = !(c > p && src_[c - 1] == '+');
        end = c + 2;
      } else if (opener == '%' && is_raw(p)) {
        end = lex_raw(t, p, strip_after, trim);
      } else {
        bool block = opener == '%';
        out_.push_back({block ? Tok::BlockBegin : Tok::VarBegin, "", 0, 0});
        set_pos(out_.back(), t);
        end = lex_tag(p, block, strip_after, trim);
        trim = block && trim;
      }
      pos = end;
      if (strip_after) {
        pos += space_run(src_, pos);
      } else if (trim && pos < n && src_[pos] == '\n') {
        ++pos;
      }
      line_starting = pos > 0 && src_[pos - 1] == '\n';
    }
    Token eof{Tok::Eof, "", 0, 0};
    set_pos(eof, n);
    out_.push_back(eof);
    return std::move(out_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t k = src_.find('{', from); k != std::string::npos; k = src_.find('{', k + 1))
      if (k + 1 < src_.size() && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#'))
        return k;
    return std::string::npos;
  }

  void set_pos(Token& tok, size_t pos) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos) - 1;
    tok.line = static_cast<int>(it - line_starts_.begin()) + 1;
    int col = 1;
    for (size_t k = *it; k < pos && k < src_.size(); ++k)
      if ((static_cast<unsigned char>(src_[k]) & 0xC0) != 0x80) ++col;
    tok.col = col;
  }

  [[noreturn]] void syntax_error_at(size_t pos, const std::string& msg) const {
    Token t{Tok::Eof, "", 0, 0};
    set_pos(t, pos);
    syntax_error(t.line, t.col, msg);
  }

  void emit_data(const std::string& text, size_t pos) {
    if (text.empty()) return;
    Token t{Tok::Data, text, 0, 0};
    set_pos(t, pos);
    out_.push_back(std::move(t));
  }

  // "{% raw %}" (with optional - / + markers) starting after the opener.
  bool is_raw(size_t p) const {
    while (p < src_.size() && ascii_space(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < src_.size() && ascii_space(src_[p])) ++p;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    return src_.compare(p, 2, "%}") == 0;
  }

  size_t lex_raw(size_t tag_start, size_t p, bool& strip_after, bool& trim) {
    size_t close = src_.find("%}", p);
    bool strip_inner = close > 0 && src_[close - 1] == '-';
    size_t body = close + 2;
    if (strip_inner)
      body += space_run(src_, body);
    else if (src_.compare(body, 1, "\n") == 0 && src_[close - 1] != '+')
      ++body;
    for (size_t k = src_.find("{%", body); k != std::string::npos; k = src_.find("{%", k + 2)) {
      size_t q = k + 2;
      bool strip_before = q < src_.size() && src_[q] == '-';
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) ++q;
      while (q < src_.size() && ascii_space(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q += 6;
      while (q < src_.size() && ascii_space(src_[q])) ++q;
      char m = q < src_.size() ? src_[q] : '\0';
      if (m == '-' || m == '+') ++q;
      if (src_.compare(q, 2, "%}") != 0) continue;
      std::string text = src_.substr(body, k - body);
      if (strip_before) text = py_strip(text, false, true);
      emit_data(text, body);
      strip_after = m == '-';
      trim = m != '+';
      return q + 2;
    }
    syntax_error_at(tag_start, "missing end of raw directive");
  }

  // Tokens of one {{ ... }} or {% ... %}; returns the position after the closing delimiter.
  size_t lex_tag(size_t p, bool block, bool& strip_after, bool& trim) {
    std::vector<char> stack;
    const size_t n = src_.size();
    while (true) {
      p += space_run(src_, p);
      if (p >= n)
        syntax_error_at(
            p, std::string("unexpected end of template, expected '") + (block ? "%}" : "}}") + "'");
      if (stack.empty()) {
        const char* closers[3] = {block ? "-%}" : "-}}", block ? "+%}" : "", block ? "%}" : "}}"};
        bool closed = false;
        for (int k = 0; k < 3 && !closed; ++k) {
          size_t len = std::strlen(closers[k]);
          if (len && src_.compare(p, len, closers[k]) == 0) {
            Token t{block ? Tok::BlockEnd : Tok::VarEnd, "", 0, 0};
            set_pos(t, p);
            out_.push_back(t);
            strip_after = k == 0;
            trim = k != 1;
            p += len;
            closed = true;
          }
        }
        if (closed) return p;
      }
      Token t{Tok::Op, "", 0, 0};
      set_pos(t, p);
      char c = src_[p];
      // Names: ASCII letters, digits, '_' and (as Python identifiers allow) non-ASCII letters.
      auto name_char = [](char ch) {
        unsigned char u = static_cast<unsigned char>(ch);
        return std::isalnum(u) || ch == '_' || u >= 0x80;
      };
      if (name_char(c) && !std::isdigit(static_cast<unsigned char>(c))) {
        size_t q = p;
        while (q < n && name_char(src_[q])) ++q;
        t.kind = Tok::Name;
        t.text = src_.substr(p, q - p);
        p = q;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        p = lex_number(p, t);
      } else if (c == '\'' || c == '"') {
        p = lex_string(p, t);
      } else {
        static const char* ops[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                    "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                    ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};
        const char* hit = nullptr;
        for (const char* op : ops)
          if (src_.compare(p, std::strlen(op), op) == 0) {
            hit = op;
            break;
          }
        if (!hit) {
          std::string ch = (static_cast<unsigned char>(c) < 0x80) ? std::string(1, c) : "non-ASCII";
          syntax_error_at(p, "unexpected char '" + ch + "'");
        }
        t.text = hit;
        p += t.text.size();
        if (t.text == "(" || t.text == "[" || t.text == "{") {
          stack.push_back(t.text[0]);
        } else if (t.text == ")" || t.text == "]" || t.text == "}") {
          char want = t.text == ")" ? '(' : t.text == "]" ? '[' : '{';
          if (stack.empty() || stack.back() != want)
            syntax_error(t.line, t.col, "unexpected '" + t.text + "'");
          stack.pop_back();
        }
      }
      out_.push_back(std::move(t));
    }
  }

  size_t lex_number(size_t p, Token& t) {
    const size_t n = src_.size();
    bool after_dot = !out_.empty() && out_.back().kind == Tok::Op && out_.back().text == ".";
    size_t q = p;
    auto digits = [&](auto pred) {
      while (q < n && (pred(src_[q]) || (src_[q] == '_' && q + 1 < n && pred(src_[q + 1])))) ++q;
    };
    auto dec = [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; };
    t.kind = Tok::Int;
    if (src_[p] == '0' && q + 1 < n && std::strchr("xXoObB", src_[p + 1])) {
      char base = static_cast<char>(std::tolower(src_[p + 1]));
      q = p + 2;
      auto ok = [base](char ch) {
        if (base == 'x') return std::isxdigit(static_cast<unsigned char>(ch)) != 0;
        if (base == 'o') return ch >= '0' && ch <= '7';
        return ch == '0' || ch == '1';
      };
      digits(ok);
      if (q == p + 2) syntax_error(t.line, t.col, "invalid number literal");
    } else {
      digits(dec);
      if (!after_dot && q + 1 < n && src_[q] == '.' && dec(src_[q + 1])) {
        ++q;
        digits(dec);
        t.kind = Tok::Float;
      }
      if (!after_dot && q < n && (src_[q] == 'e' || src_[q] == 'E')) {
        size_t r = q + 1;
        if (r < n && (src_[r] == '+' || src_[r] == '-')) ++r;
        if (r < n && dec(src_[r])) {
          q = r;
          digits(dec);
          t.kind = Tok::Float;
        }
      }
      // Python integers have no leading zeros: "08" lexes as "0" then "8" (a syntax error).
      if (t.kind == Tok::Int && src_[p] == '0') {
        q = p + 1;
        while (q < n && (src_[q] == '0' || (src_[q] == '_' && q + 1 < n && src_[q + 1] == '0')))
          ++q;
      }
    }
    t.text = src_.substr(p, q - p);
    return q;
  }

  // A quoted literal, decoded like Python's unicode-escape (what Jinja applies to it).
  size_t lex_string(size_t p, Token& t) {
    const char q = src_[p];
    const size_t n = src_.size();
    std::string raw;
    size_t k = p + 1;
    while (true) {
      if (k >= n) syntax_error(t.line, t.col, "unterminated string literal");
      if (src_[k] == q) break;
      if (src_[k] == '\\' && k + 1 < n) {
        raw += src_.substr(k, 2);
        k += 2;
        continue;
      }
      raw += src_[k++];
    }
    t.kind = Tok::String;
    t.text = unescape(raw, t);
    return k + 1;
  }

  static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  std::string unescape(const std::string& s, const Token& t) const {
    std::string out;
    for (size_t k = 0; k < s.size(); ++k) {
      if (s[k] != '\\' || k + 1 >= s.size()) {
        out += s[k];
        continue;
      }
      if (static_cast<unsigned char>(s[k + 1]) >= 0x80) {
        // Jinja decodes literals as s.encode("ascii", "backslashreplace").decode("unicode-escape"),
        // so a backslash before a non-ASCII character yields the text of its escape ("\\xe9").
        std::u32string u = utf8_decode(s.substr(k + 1, 4));
        char buf[16];
        char32_t c = u.empty() ? 0 : u[0];
        if (c <= 0xFF)
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
        else if (c <= 0xFFFF)
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
        else
          std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
        out += buf;
        std::string enc;
        utf8_append(enc, c);
        k += enc.size();
        continue;
      }
      char e = s[++k];
      switch (e) {
        case '\n':
          break;  // line continuation
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
        case 'u':
        case 'U': {
          int len = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int d = 0; d < len; ++d) {
            int h = k + 1 + d < s.size() ? hexval(s[k + 1 + d]) : -1;
            if (h < 0) syntax_error(t.line, t.col, std::string("truncated \\") + e + " escape");
            cp = cp * 16 + static_cast<uint32_t>(h);
          }
          if (cp > 0x10FFFF) syntax_error(t.line, t.col, "illegal Unicode character");
          utf8_append(out, cp);
          k += len;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int d = 0; d < 2 && k + 1 < s.size() && s[k + 1] >= '0' && s[k + 1] <= '7'; ++d)
              cp = cp * 8 + static_cast<uint32_t>(s[++k] - '0');
            utf8_append(out, cp);
          } else {  // unknown escapes stay as written
            out += '\\';
            out += e;
          }
      }
    }
    return out;
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) {
  // Jinja normalizes \r\n and \r to \n and drops one trailing newline.
  std::string src;
  src.reserve(source.size());
  for (size_t k = 0; k < source.size(); ++k) {
    if (source[k] == '\r') {
      src += '\n';
      if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
    } else {
      src += source[k];
    }
  }
  if (!src.empty() && src.back() == '\n') src.pop_back();
  return Lexer(std::move(src)).run();
}

}  // namespace tessera::jinja
