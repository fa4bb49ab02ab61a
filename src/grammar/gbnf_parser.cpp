// GBNF, as llama.cpp's grammar-parser.cpp reads it (src/llama-grammar.cpp: parse_sequence,
// parse_alternates, parse_space), into expressions.
#include <cstring>

#include "core/check.h"
#include "grammar/parse.h"

namespace tessera::grammar {

namespace {

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view s) : s_(s) {}

  ExprGrammar run() {
    ExprGrammar g;
    space(true);
    while (i_ < s_.size()) {
      const std::string name = word();
      if (name.empty()) error("expected a rule name");
      space(false);
      if (s_.substr(i_, 3) != "::=") error("expected '::=' after rule name '" + name + "'");
      i_ += 3;
      space(true);
      g.rules.push_back({name, alternates(false)});
      space(true);
    }
    if (g.rules.empty()) error("the grammar has no rules");
    return g;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail_arg("grammar: " + what + " at offset " + std::to_string(i_));
  }
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[i_]; }

  // Blanks and comments; newlines only where `newlines` (inside groups, after '|' or '::=').
  void space(bool newlines) {
    while (!at_end()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && newlines)) {
        ++i_;
      } else if (c == '#') {
        while (!at_end() && s_[i_] != '\n') ++i_;
      } else {
        break;
      }
    }
  }

  static bool word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  }
  std::string word() {
    const size_t b = i_;
    while (!at_end() && word_char(s_[i_])) ++i_;
    return std::string(s_.substr(b, i_ - b));
  }

  // A continuation line starting with '|' (after blanks) continues the rule.
  bool continues_with_bar() {
    size_t j = i_;
    while (j < s_.size() && (s_[j] == ' ' || s_[j] == '\t' || s_[j] == '\n' || s_[j] == '\r')) ++j;
    if (j < s_.size() && s_[j] == '|') {
      i_ = j;
      return true;
    }
    return false;
  }

  Expr alternates(bool nested) {
    std::vector<Expr> alts;
    alts.push_back(sequence(nested));
    while (peek() == '|' || (!nested && continues_with_bar())) {
      ++i_;
      space(true);
      alts.push_back(sequence(nested));
    }
    return alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts));
  }

  uint32_t hex(int n) {
    uint32_t v = 0;
    for (int k = 0; k < n; ++k) {
      const char c = peek();
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) error("expected " + std::to_string(n) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
      ++i_;
    }
    return v;
  }

  // One code point of a literal or class, escapes decoded.
  uint32_t character() {
    if (at_end()) error("unexpected end of the grammar");
    const auto b = static_cast<uint8_t>(s_[i_]);
    if (b == '\\') {
      ++i_;
      const char c = peek();
      ++i_;
      switch (c) {
        case 'n':
          return '\n';
        case 't':
          return '\t';
        case 'r':
          return '\r';
        case 'x':
          return hex(2);
        case 'u':
          return hex(4);
        case 'U':
          return hex(8);
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '\'':
          return static_cast<uint32_t>(c);
        default:
          --i_;
          error(std::string("unknown escape '\\") + c + "'");
      }
    }
    const int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t c = n == 1 ? b : n == 2 ? b & 0x1F : n == 3 ? b & 0x0F : b & 0x07;
    for (int j = 1; j < n && i_ + j < s_.size(); ++j) c = (c << 6) | (s_[i_ + j] & 0x3F);
    i_ += n;
    return c;
  }

  Expr char_class() {
    ++i_;  // '['
    const bool neg = peek() == '^';
    if (neg) ++i_;
    std::vector<CodeRange> r;
    while (peek() != ']') {
      if (at_end()) error("unterminated character class");
      const uint32_t lo = character();
      uint32_t hi = lo;
      if (peek() == '-' && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
        ++i_;
        hi = character();
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

  Expr sequence(bool nested) {
    std::vector<Expr> items;
    for (;;) {
      space(nested);
      const char c = peek();
      if (at_end() || c == '|' || c == ')' || c == '\n' || c == '\r') break;
      if (c == '"') {
        ++i_;
        std::vector<Expr> lit;
        while (peek() != '"') {
          if (at_end()) error("unterminated string literal");
          lit.push_back(Expr::codepoint(character()));
        }
        ++i_;
        items.push_back(Expr::seq(std::move(lit)));
      } else if (c == '[') {
        items.push_back(char_class());
      } else if (c == '.') {
        ++i_;
        items.push_back(Expr::chars({{0, 0x10FFFF}}));
      } else if (c == '(') {
        ++i_;
        space(true);
        items.push_back(alternates(true));
        space(true);
        if (peek() != ')') error("expected ')'");
        ++i_;
      } else if (word_char(c)) {
        const size_t b = i_;
        std::string name = word();
        space(nested);
        if (s_.substr(i_, 3) == "::=") {  // the next rule's head: this rule ended
          i_ = b;
          break;
        }
        i_ = b + name.size();
        items.push_back(Expr::ref(std::move(name)));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (items.empty()) error(std::string("'") + c + "' follows nothing");
        ++i_;
        int mn = 0, mx = -1;
        if (c == '+') mn = 1;
        if (c == '?') mx = 1;
        if (c == '{') {
          space(false);
          mn = number();
          mx = mn;
          space(false);
          if (peek() == ',') {
            ++i_;
            space(false);
            mx = peek() == '}' ? -1 : number();
            space(false);
          }
          if (peek() != '}') error("expected '}'");
          ++i_;
        }
        items.back() = Expr::repeat(std::move(items.back()), mn, mx);
      } else {
        error(std::string("unexpected character '") + c + "'");
      }
    }
    return items.size() == 1 ? std::move(items[0]) : Expr::seq(std::move(items));
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

ExprGrammar parse_gbnf(std::string_view src) {
  return GbnfParser(src).run();
}

}  // namespace tessera::grammar
