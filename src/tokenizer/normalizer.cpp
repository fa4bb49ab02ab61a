#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

#include "core/check.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pattern.h"
#include "tokenizer/utf8.h"

namespace tessera::tok {

namespace {

// ref: tokenizers normalizers/replace.rs. Every match (empty ones included) becomes `content`.
class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(std::unique_ptr<Pattern> p, std::string content)
      : pattern_(std::move(p)), content_(std::move(content)) {}
  void normalize(std::string& s) const override {
    thread_local std::vector<Span> matches;
    pattern_->find_all(s, matches);
    if (matches.empty()) return;
    std::string out;
    out.reserve(s.size() + matches.size() * content_.size());
    size_t last = 0;
    for (auto [b, e] : matches) {
      out.append(s, last, b - last);
      out += content_;
      last = e;
    }
    out.append(s, last, std::string::npos);
    s.swap(out);
  }

 private:
  std::unique_ptr<Pattern> pattern_;
  std::string content_;
};

// ref: normalizers/prepend.rs: only non-empty strings get the prefix.
class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string p) : prepend_(std::move(p)) {}
  void normalize(std::string& s) const override {
    if (!s.empty()) s.insert(0, prepend_);
  }

 private:
  std::string prepend_;
};

// NFC / NFD / NFKC / NFKD through utf8proc. ASCII text is left as it is in every form.
class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(int options) : options_(options) {}
  void normalize(std::string& s) const override {
    size_t i = 0;
    while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
    if (i == s.size()) return;
    utf8proc_uint8_t* out = nullptr;
    utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                      static_cast<utf8proc_ssize_t>(s.size()), &out,
                                      static_cast<utf8proc_option_t>(options_));
    if (n < 0) {
      fail(ErrorKind::internal, std::string("Unicode normalization failed: ") + utf8proc_errmsg(n));
    }
    s.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);
  }

 private:
  int options_;
};

// ref: normalizers/utils.rs Lowercase: Rust's char::to_lowercase on every character.
class LowercaseNormalizer final : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) append_lowercase(out, next_cp(s, i));
    s.swap(out);
  }
};

// ref: normalizers/strip.rs: trims Unicode White_Space.
class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& s) const override {
    size_t b = 0, e = s.size();
    if (left_) {
      while (b < e) {
        size_t j = b;
        if (!is_white_space(next_cp(s, j))) break;
        b = j;
      }
    }
    if (right_) {
      while (e > b) {
        size_t j = e;
        if (!is_white_space(prev_cp(s, j))) break;
        e = j;
      }
    }
    if (b != 0 || e != s.size()) s = s.substr(b, e - b);
  }

 private:
  bool left_, right_;
};

// ref: normalizers/strip.rs StripAccents: drops combining marks (categories Mn, Mc, Me).
class StripAccentsNormalizer final : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
      size_t start = i;
      char32_t c = next_cp(s, i);
      if (c >= 0x300) {
        auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
        if (cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC ||
            cat == UTF8PROC_CATEGORY_ME) {
          continue;
        }
      }
      out.append(s, start, i - start);
    }
    s.swap(out);
  }
};

// ref: normalizers/byte_level.rs: every byte becomes its GPT-2 byte-level character.
class ByteLevelNormalizer final : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    std::string out;
    byte_level_encode(s, out);
    s.swap(out);
  }
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> v) : steps_(std::move(v)) {}
  void normalize(std::string& s) const override {
    for (const auto& n : steps_) n->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> Normalizer::from_json(const JNode& node) {
  std::string_view type = node.type();
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> steps;
    JNode list = node.at("normalizers");
    if (!list.is_array()) list.fail("expected an array");
    size_t i = 0;
    for (JElem child : list.e.get_array()) steps.push_back(from_json(list.index(i++, child)));
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(Pattern::from_json(node.at("pattern")),
                                               std::string(node.str("content")));
  }
  if (type == "Prepend")
    return std::make_unique<PrependNormalizer>(std::string(node.str("prepend")));
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  if (type == "NFD") {
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
  }
  if (type == "NFKC") {
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_COMPOSE |
                                               UTF8PROC_COMPAT);
  }
  if (type == "NFKD") {
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE |
                                               UTF8PROC_COMPAT);
  }
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(node.bool_or("strip_left", true),
                                             node.bool_or("strip_right", true));
  }
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  node.unsupported("normalizer type \"" + std::string(type) + "\"");
}

}  // namespace tessera::tok
