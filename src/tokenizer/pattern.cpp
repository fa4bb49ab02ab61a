#include "tokenizer/pattern.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstring>

#include "core/check.h"
#include "tokenizer/utf8.h"

namespace tessera::tok {

namespace {

// Oniguruma's \s for Unicode strings: 0x09-0x0D, 0x85 and the Z categories (the White_Space
// property). PCRE2's \s lacks U+0085, so it is spelled out.
constexpr const char* kSpaceItems =
    "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
    "\\x{202F}\\x{205F}\\x{3000}";
// Oniguruma's Unicode \w: Letter | Mark | Number | Connector_Punctuation.
constexpr const char* kWordItems = "\\p{L}\\p{M}\\p{N}\\p{Pc}";

class LiteralPattern final : public Pattern {
 public:
  explicit LiteralPattern(std::string s) : s_(std::move(s)) {}
  void find_all(std::string_view text, std::vector<Span>& out) const override {
    out.clear();
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t at = text.find(s_, pos);
      if (at == std::string_view::npos) break;
      out.emplace_back(static_cast<uint32_t>(at), static_cast<uint32_t>(at + s_.size()));
      pos = at + s_.size();
    }
  }

 private:
  std::string s_;  // never empty (an empty literal goes to RegexPattern)
};

// Per-thread PCRE2 scratch: match data for the whole-match offsets and a JIT stack large enough
// for long runs (a 100 KB word).
struct Pcre2Scratch {
  pcre2_match_data* md = nullptr;
  pcre2_match_context* mctx = nullptr;
  pcre2_jit_stack* stack = nullptr;
  Pcre2Scratch() {
    md = pcre2_match_data_create(1, nullptr);
    mctx = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(64 * 1024, 16 * 1024 * 1024, nullptr);
    pcre2_jit_stack_assign(mctx, nullptr, stack);
  }
  ~Pcre2Scratch() {
    pcre2_match_data_free(md);
    pcre2_match_context_free(mctx);
    pcre2_jit_stack_free(stack);
  }
};

Pcre2Scratch& scratch() {
  thread_local Pcre2Scratch s;
  return s;
}

class RegexPattern final : public Pattern {
 public:
  RegexPattern(const std::string& onig, const std::string& where) {
    std::string p = onig_to_pcre2(onig);
    int err = 0;
    PCRE2_SIZE off = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(),
                          PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &err, &off, nullptr);
    if (!code_) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      fail_model(where + ": regex /" + onig + "/ does not compile (" +
                 reinterpret_cast<const char*>(msg) + " at offset " + std::to_string(off) + ")");
    }
    jit_ = pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE) == 0;
  }
  ~RegexPattern() override { pcre2_code_free(code_); }

  void find_all(std::string_view text, std::vector<Span>& out) const override {
    out.clear();
    Pcre2Scratch& s = scratch();
    auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t start = 0;
    bool have_last = false;
    size_t last_end = 0;
    while (start <= text.size()) {
      int rc =
          jit_ ? pcre2_jit_match(code_, subject, text.size(), start, 0, s.md, s.mctx)
               : pcre2_match(code_, subject, text.size(), start, PCRE2_NO_UTF_CHECK, s.md, s.mctx);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof msg);
        fail(ErrorKind::internal,
             std::string("tokenizer regex match failed: ") + reinterpret_cast<const char*>(msg));
      }
      PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.md);
      size_t b = ov[0], e = ov[1];
      if (b == e && have_last && last_end == e) {
        // Empty match right after the previous one: step over one character and retry.
        if (start >= text.size()) break;
        start += utf8_len(static_cast<unsigned char>(text[start]));
        continue;
      }
      out.emplace_back(static_cast<uint32_t>(b), static_cast<uint32_t>(e));
      start = e;
      have_last = true;
      last_end = e;
    }
  }

 private:
  pcre2_code* code_ = nullptr;
  bool jit_ = false;
};

}  // namespace

std::string onig_to_pcre2(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  int depth = 0;  // character-class nesting
  for (size_t i = 0; i < p.size();) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char d = p[i + 1];
      bool in = depth > 0;
      switch (d) {
        case 's':
          out += in ? std::string(kSpaceItems) : "[" + std::string(kSpaceItems) + "]";
          break;
        case 'S':
          out += in ? std::string("\\S") : "[^" + std::string(kSpaceItems) + "]";
          break;
        case 'w':
          out += in ? std::string(kWordItems) : "[" + std::string(kWordItems) + "]";
          break;
        case 'W':
          out += in ? std::string("\\W") : "[^" + std::string(kWordItems) + "]";
          break;
        case 'd':
          out += "\\p{Nd}";
          break;
        case 'D':
          out += "\\P{Nd}";
          break;
        case 'h':  // Ruby: a hexadecimal digit (PCRE2: horizontal space)
          out += in ? "0-9a-fA-F" : "[0-9a-fA-F]";
          break;
        case 'H':
          out += in ? "\\x00-/:-@G-`g-\\x{10FFFF}" : "[^0-9a-fA-F]";
          break;
        default:
          out.push_back(c);
          out.push_back(d);
      }
      i += 2;
      continue;
    }
    if (c == '[') {
      if (depth > 0 && i + 1 < p.size() && p[i + 1] == ':') {
        size_t close = p.find(":]", i + 2);
        if (close != std::string_view::npos) {
          out.append(p.substr(i, close + 2 - i));
          i = close + 2;
          continue;
        }
      }
      ++depth;
      out.push_back(c);
      ++i;
      if (i < p.size() && p[i] == '^') out.push_back(p[i++]);
      if (i < p.size() && p[i] == ']') out.push_back(p[i++]);  // a leading ']' is literal
      continue;
    }
    if (c == ']' && depth > 0) --depth;
    out.push_back(c);
    ++i;
  }
  return out;
}

std::unique_ptr<Pattern> Pattern::literal(std::string s) {
  if (s.empty()) return regex("", "empty string pattern");
  return std::make_unique<LiteralPattern>(std::move(s));
}

std::unique_ptr<Pattern> Pattern::regex(const std::string& onig, const std::string& where) {
  return std::make_unique<RegexPattern>(onig, where);
}

std::unique_ptr<Pattern> Pattern::from_json(const JNode& node) {
  if (!node.is_object()) node.fail("expected {\"String\": ...} or {\"Regex\": ...}");
  if (auto s = node.get("String")) return literal(std::string(s->str()));
  if (auto r = node.get("Regex")) {
    return regex(std::string(r->str()), *node.file + ": " + node.path);
  }
  node.fail("expected {\"String\": ...} or {\"Regex\": ...}");
}

}  // namespace tessera::tok
