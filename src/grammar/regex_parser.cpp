// Regular expressions (the ECMA-262 subset JSON Schema's "pattern" and vLLM's guided_regex use)
// into expressions; the whole output must match, as outlines and vLLM compile a guided regex.
#include "core/check.h"
#include "grammar/parse.h"

namespace tessera::grammar {

namespace {

const std::vector<CodeRange> kDigit = {{'0', '9'}};
const std::vector<CodeRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CodeRange> kSpace = {{'\t', '\r'}, {' ', ' '}};

class RegexParser {
 public:
  explicit RegexParser(std::string_view s) : s_(s) {}

  Expr run() {
    if (peek() == '^') ++i_;
    Expr e = alternates();
    if (!at_end()) error(peek() == ')' ? "unbalanced ')'" : "unexpected character");
    return e;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail_arg("regex: " + what + " at offset " + std::to_string(i_));
  }
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[i_]; }

  Expr alternates() {
    std::vector<Expr> alts;
    alts.push_back(sequence());
    while (peek() == '|') {
      ++i_;
      alts.push_back(sequence());
    }
    return alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts));
  }

  uint32_t hex(int n) {
    uint32_t v = 0;
    for (int k = 0; k < n; ++k) {
      const char c = peek();
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) error("expected " + std::to_string(n) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
      ++i_;
    }
    return v;
  }

  uint32_t utf8_char() {
    const auto b = static_cast<uint8_t>(s_[i_]);
    const int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t c = n == 1 ? b : n == 2 ? b & 0x1F : n == 3 ? b & 0x0F : b & 0x07;
    for (int j = 1; j < n && i_ + j < s_.size(); ++j) c = (c << 6) | (s_[i_ + j] & 0x3F);
    i_ += n;
    return c;
  }

  // After a backslash: a class (\d ...) into `set`, or one code point.
  bool escape(std::vector<CodeRange>& set, uint32_t& cp) {
    if (at_end()) error("a trailing backslash");
    const char c = s_[i_++];
    switch (c) {
      case 'd':
        set = kDigit;
        return true;
      case 'w':
        set = kWord;
        return true;
      case 's':
        set = kSpace;
        return true;
      case 'D':
        set = negate(kDigit);
        return true;
      case 'W':
        set = negate(kWord);
        return true;
      case 'S':
        set = negate(kSpace);
        return true;
      case 'n':
        cp = '\n';
        return false;
      case 't':
        cp = '\t';
        return false;
      case 'r':
        cp = '\r';
        return false;
      case 'f':
        cp = '\f';
        return false;
      case 'v':
        cp = '\v';
        return false;
      case '0':
        cp = 0;
        return false;
      case 'x':
        cp = hex(2);
        return false;
      case 'u':
        cp = hex(4);
        return false;
      default:
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
          --i_;
          error(std::string("unsupported escape '\\") + c + "'");
        }
        cp = static_cast<uint8_t>(c);
        return false;
    }
  }

  Expr char_class() {
    ++i_;  // '['
    const bool neg = peek() == '^';
    if (neg) ++i_;
    std::vector<CodeRange> r;
    bool first = true;
    while (peek() != ']' || first) {
      if (at_end()) error("unterminated character class");
      first = false;
      uint32_t lo;
      if (peek() == '\\') {
        ++i_;
        std::vector<CodeRange> set;
        if (escape(set, lo)) {
          r.insert(r.end(), set.begin(), set.end());
          continue;
        }
      } else {
        lo = utf8_char();
      }
      uint32_t hi = lo;
      if (peek() == '-' && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
        ++i_;
        if (peek() == '\\') {
          ++i_;
          std::vector<CodeRange> set;
          if (escape(set, hi)) error("a class cannot end a range");
        } else {
          hi = utf8_char();
        }
        if (hi < lo) error("a character range goes backwards");
      }
      r.push_back({lo, hi});
    }
    ++i_;
    return Expr::chars(neg ? negate(r) : r);
  }

  int number() {
    const size_t b = i_;
    long v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > 1000000) error("a repetition count is too large");
      ++i_;
    }
    if (i_ == b) error("expected a number");
    return static_cast<int>(v);
  }

  Expr sequence() {
    std::vector<Expr> items;
    for (;;) {
      if (at_end()) break;
      const char c = peek();
      if (c == '|' || c == ')') break;
      if (c == '$' && i_ + 1 == s_.size()) {
        ++i_;
        break;
      }
      if (c == '(') {
        ++i_;
        if (peek() == '?') {
          if (s_.substr(i_, 2) != "?:") error("only (?:...) groups are supported");
          i_ += 2;
        }
        items.push_back(alternates());
        if (peek() != ')') error("expected ')'");
        ++i_;
      } else if (c == '[') {
        items.push_back(char_class());
      } else if (c == '.') {
        ++i_;
        items.push_back(Expr::chars(negate({{'\n', '\n'}})));
      } else if (c == '\\') {
        ++i_;
        std::vector<CodeRange> set;
        uint32_t cp = 0;
        items.push_back(escape(set, cp) ? Expr::chars(set) : Expr::codepoint(cp));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (items.empty()) error(std::string("'") + c + "' follows nothing");
        ++i_;
        int mn = 0, mx = -1;
        if (c == '+') mn = 1;
        if (c == '?') mx = 1;
        if (c == '{') {
          mn = number();
          mx = mn;
          if (peek() == ',') {
            ++i_;
            mx = peek() == '}' ? -1 : number();
          }
          if (peek() != '}') error("expected '}'");
          ++i_;
        }
        if (peek() == '?') ++i_;  // lazy: the same language
        items.back() = Expr::repeat(std::move(items.back()), mn, mx);
      } else {
        items.push_back(Expr::codepoint(utf8_char()));
      }
    }
    return items.size() == 1 ? std::move(items[0]) : Expr::seq(std::move(items));
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

Expr parse_regex(std::string_view src) {
  return RegexParser(src).run();
}

}  // namespace tessera::grammar
