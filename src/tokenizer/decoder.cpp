#include "tokenizer/decoder.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/pattern.h"
#include "tokenizer/utf8.h"

namespace tessera::tok {

namespace {

// ref: pre_tokenizers/byte_level.rs (Decoder): every token whose characters are all byte-level
// characters becomes those bytes, any other token its own UTF-8; the whole byte string is then
// converted lossily. One output string.
class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      if (!byte_level_decode(t, bytes)) bytes += t;
    }
    tokens.assign(1, utf8_lossy(bytes));
  }
};

// ref: normalizers/replace.rs (Decoder): replaces the pattern inside each token.
class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(std::unique_ptr<Pattern> p, std::string content)
      : pattern_(std::move(p)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<Span> m;
    for (std::string& t : tokens) {
      pattern_->find_all(t, m);
      if (m.empty()) continue;
      std::string out;
      size_t last = 0;
      for (auto [b, e] : m) {
        out.append(t, last, b - last);
        out += content_;
        last = e;
      }
      out.append(t, last, std::string::npos);
      t.swap(out);
    }
  }

 private:
  std::unique_ptr<Pattern> pattern_;
  std::string content_;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "<0xNN>" -> NN; -1 for any other token. Rust's u8::from_str_radix also takes "+N".
int byte_token_value(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
  if (t[3] == '+' && lo >= 0) return lo;
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

// ref: decoders/byte_fallback.rs: runs of <0xNN> tokens become their UTF-8 text when valid, else
// one U+FFFD per byte.
class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string run;
    auto flush = [&]() {
      if (run.empty()) return;
      if (find_invalid_utf8(run) == std::string::npos) {
        out.push_back(run);
      } else {
        for (size_t i = 0; i < run.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      run.clear();
    };
    for (std::string& t : tokens) {
      int b = byte_token_value(t);
      if (b >= 0) {
        run.push_back(static_cast<char>(b));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens.swap(out);
  }
};

// ref: decoders/fuse.rs
class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

// ref: decoders/strip.rs: removes up to `start` leading and `stop` trailing `content` characters
// from each token.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      size_t b = 0;
      for (size_t k = 0; k < start_ && b < t.size(); ++k) {
        size_t j = b;
        if (next_cp(t, j) != content_) break;
        b = j;
      }
      size_t e = t.size();
      for (size_t k = 0; k < stop_ && e > b; ++k) {
        size_t j = e;
        if (prev_cp(t, j) != content_) break;
        e = j;
      }
      t = t.substr(b, e - b);
    }
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

// ref: pre_tokenizers/metaspace.rs (Decoder): the replacement character becomes a space, except
// in the first token where it is dropped (unless prepend_scheme is "never").
class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(char32_t replacement, bool strip_first)
      : replacement_(replacement), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      const std::string& t = tokens[i];
      std::string out;
      out.reserve(t.size());
      for (size_t k = 0; k < t.size();) {
        size_t start = k;
        char32_t c = next_cp(t, k);
        if (c == replacement_) {
          if (!(i == 0 && strip_first_)) out.push_back(' ');
        } else {
          out.append(t, start, k - start);
        }
      }
      tokens[i].swap(out);
    }
  }

 private:
  char32_t replacement_;
  bool strip_first_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> v) : steps_(std::move(v)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& d : steps_) d->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> Decoder::from_json(const JNode& node) {
  std::string_view type = node.type();
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> steps;
    JNode list = node.at("decoders");
    if (!list.is_array()) list.fail("expected an array");
    size_t i = 0;
    for (JElem child : list.e.get_array()) steps.push_back(from_json(list.index(i++, child)));
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(Pattern::from_json(node.at("pattern")),
                                            std::string(node.str("content")));
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    int64_t start = node.int_or("start", 0), stop = node.int_or("stop", 0);
    if (start < 0 || stop < 0) node.fail("start and stop must not be negative");
    return std::make_unique<StripDecoder>(node.character("content"), static_cast<size_t>(start),
                                          static_cast<size_t>(stop));
  }
  if (type == "Metaspace") {
    bool strip_first = true;
    if (auto ps = node.get("prepend_scheme")) {
      strip_first = ps->str() != "never";
    } else {
      strip_first = node.bool_or("add_prefix_space", true);
    }
    return std::make_unique<MetaspaceDecoder>(node.character("replacement"), strip_first);
  }
  node.unsupported("decoder type \"" + std::string(type) + "\"");
}

}  // namespace tessera::tok
