#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <string_view>
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

// A character that every normalization form leaves alone whatever surrounds it, except that it
// may be the first of a composition pair: no decomposition, combining class 0, and not the
// second character of any composition (utf8proc's comb_index >= 0x8000 marks those; Hangul jamo
// compose algorithmically and are checked by range, as are Hangul syllables, which NFD and NFKD
// decompose without utf8proc listing a decomposition). For NFC alone, everything below U+0300
// qualifies (precomposed Latin letters are NFC already).
bool stable_char(char32_t c, bool nfc) {
  if (c < 0x80 || (nfc && c < 0x300)) return true;
  if ((c >= 0x1161 && c <= 0x1175) || (c >= 0x11A7 && c <= 0x11C2)) return false;
  if (!nfc && c >= 0xAC00 && c <= 0xD7A3) return false;
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(c));
  if (p->combining_class != 0 || p->decomp_seqindex != UINT16_MAX) return false;
  return p->comb_index == UINT16_MAX || p->comb_index < 0x8000;
}

// The shortcut relies on how utf8proc 2.x lays out comb_index; check it on known characters and
// normalize everything the slow way if a utf8proc build disagrees.
bool stable_char_table_ok() {
  static const bool ok =
      stable_char(0x4E2D, false) && stable_char(0x61, false) && stable_char(0x438, false) &&
      !stable_char(0x301, false) && !stable_char(0x9BE, false) && !stable_char(0x3099, false) &&
      !stable_char(0xE9, false) && stable_char(0xE9, true) && !stable_char(0x212B, true);
  return ok;
}

// NFC / NFD / NFKC / NFKD through utf8proc. Only the runs of characters that can change (with
// the character just before each run, which a composition may absorb) go through utf8proc:
// a text is the concatenation of its stable characters and those runs, normalized apart.
class UnicodeNormalizer final : public Normalizer {
 public:
  // `nfc`: the NFC form, whose stable set is larger (see stable_char). NFKC is passed as false:
  // its compatibility mappings reach below U+0300 (NBSP, superscripts).
  UnicodeNormalizer(int options, bool nfc) : options_(options), nfc_(nfc) {}
  void normalize(std::string& s) const override {
    size_t i = 0;
    while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
    if (i == s.size()) return;
    if (!stable_char_table_ok()) {
      std::string out;
      normalize_run(s, out);
      s.swap(out);
      return;
    }
    std::string out;
    out.reserve(s.size() + 8);
    size_t prev_in = std::string::npos, prev_out = 0;  // the last stable character copied
    i = 0;
    while (i < s.size()) {
      size_t start = i;
      char32_t c = next_cp(s, i);
      if (stable_char(c, nfc_)) {
        prev_in = start;
        prev_out = out.size();
        out.append(s, start, i - start);
        continue;
      }
      size_t end = i;
      while (end < s.size()) {
        size_t j = end;
        if (stable_char(next_cp(s, j), nfc_)) break;
        end = j;
      }
      size_t run = start;
      if (prev_in != std::string::npos) {
        run = prev_in;
        out.resize(prev_out);
      }
      normalize_run(std::string_view(s).substr(run, end - run), out);
      prev_in = std::string::npos;
      i = end;
    }
    s.swap(out);
  }

 private:
  void normalize_run(std::string_view run, std::string& out) const {
    thread_local std::vector<utf8proc_int32_t> buf;
    if (buf.size() < run.size() * 4 + 16) buf.resize(run.size() * 4 + 16);
    auto opts = static_cast<utf8proc_option_t>(options_);
    auto in = reinterpret_cast<const utf8proc_uint8_t*>(run.data());
    auto len = static_cast<utf8proc_ssize_t>(run.size());
    utf8proc_ssize_t n =
        utf8proc_decompose(in, len, buf.data(), static_cast<utf8proc_ssize_t>(buf.size()), opts);
    if (n > static_cast<utf8proc_ssize_t>(buf.size())) {
      buf.resize(static_cast<size_t>(n));
      n = utf8proc_decompose(in, len, buf.data(), n, opts);
    }
    if (n >= 0) n = utf8proc_normalize_utf32(buf.data(), n, opts);
    if (n < 0) {
      fail(ErrorKind::internal, std::string("Unicode normalization failed: ") + utf8proc_errmsg(n));
    }
    for (utf8proc_ssize_t k = 0; k < n; ++k) append_utf8(out, static_cast<char32_t>(buf[k]));
  }

  int options_;
  bool nfc_;
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
  if (type == "NFC") {
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_COMPOSE, true);
  }
  if (type == "NFD") {
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE, false);
  }
  if (type == "NFKC") {
    return std::make_unique<UnicodeNormalizer>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT,
                                               false);
  }
  if (type == "NFKD") {
    return std::make_unique<UnicodeNormalizer>(
        UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, false);
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
