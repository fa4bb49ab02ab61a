#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <string>

#include "core/check.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace tessera::tok {

void split_spans(const std::vector<Span>& matches, size_t n, bool invert, SplitBehavior behavior,
                 std::vector<Span>& out) {
  // ref: tokenizers normalizer.rs NormalizedString::split and pattern.rs find_matches: the
  // matches plus the gaps between them cover the text; a Removed/Merged decision per piece.
  thread_local std::vector<std::pair<Span, bool>> pieces;
  pieces.clear();
  if (n == 0) {
    pieces.push_back({{0, 0}, false});
  } else {
    uint32_t prev = 0;
    for (const Span& m : matches) {
      if (prev != m.first) pieces.push_back({{prev, m.first}, false});
      pieces.push_back({m, true});
      prev = m.second;
    }
    if (prev != n) pieces.push_back({{prev, static_cast<uint32_t>(n)}, false});
  }
  if (invert) {
    for (auto& p : pieces) p.second = !p.second;
  }
  out.clear();
  switch (behavior) {
    case SplitBehavior::removed:
      for (auto& [s, m] : pieces)
        if (!m) out.push_back(s);
      break;
    case SplitBehavior::isolated:
      for (auto& [s, m] : pieces) out.push_back(s);
      break;
    case SplitBehavior::merged_with_previous: {
      bool prev_match = false;
      for (auto& [s, m] : pieces) {
        if (m && !prev_match && !out.empty()) {
          out.back().second = s.second;
        } else {
          out.push_back(s);
        }
        prev_match = m;
      }
      break;
    }
    case SplitBehavior::merged_with_next: {
      bool prev_match = false;
      for (size_t i = pieces.size(); i-- > 0;) {
        auto& [s, m] = pieces[i];
        if (m && !prev_match && !out.empty()) {
          out.back().first = s.first;
        } else {
          out.push_back(s);
        }
        prev_match = m;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
    case SplitBehavior::contiguous: {
      bool prev_match = false;
      for (auto& [s, m] : pieces) {
        if (m == prev_match && !out.empty()) {
          out.back().second = s.second;
        } else {
          out.push_back(s);
        }
        prev_match = m;
      }
      break;
    }
  }
}

namespace {

void emit_spans(std::string_view text, bool at_origin, const std::vector<Span>& spans,
                PieceSink sink) {
  for (const Span& s : spans) {
    if (s.first == s.second) continue;
    sink(text.substr(s.first, s.second - s.first), at_origin && s.first == 0);
  }
}

// Per-character matches (HF's `impl Pattern for Fn(char) -> bool`): every matching character is
// a match of its own.
template <class Pred>
void char_matches(std::string_view text, Pred pred, std::vector<Span>& out) {
  out.clear();
  for (size_t i = 0; i < text.size();) {
    size_t b = i;
    char32_t c = next_cp(text, i);
    if (pred(c)) out.emplace_back(static_cast<uint32_t>(b), static_cast<uint32_t>(i));
  }
}

SplitBehavior parse_behavior(const JNode& n) {
  std::string_view b = n.str();
  if (b == "Removed") return SplitBehavior::removed;
  if (b == "Isolated") return SplitBehavior::isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (b == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (b == "Contiguous") return SplitBehavior::contiguous;
  n.fail("unknown split behavior \"" + std::string(b) + "\"");
}

// ref: pre_tokenizers/split.rs
class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(std::unique_ptr<Pattern> p, SplitBehavior b, bool invert)
      : pattern_(std::move(p)), behavior_(b), invert_(invert) {}
  void pre_tokenize(std::string_view text, bool at_origin, PieceSink sink) const override {
    std::vector<Span> matches, spans;
    pattern_->find_all(text, matches);
    split_spans(matches, text.size(), invert_, behavior_, spans);
    emit_spans(text, at_origin, spans, sink);
  }

 private:
  std::unique_ptr<Pattern> pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// ref: pre_tokenizers/byte_level.rs: optional leading space, the GPT-2 split, then every byte
// becomes its byte-level character.
class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space) {
    if (use_regex) {
      regex_ = Pattern::regex(
          "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
          "ByteLevel pre-tokenizer");
    }
  }
  void pre_tokenize(std::string_view text, bool at_origin, PieceSink sink) const override {
    std::string prefixed;
    if (add_prefix_space_ && text[0] != ' ') {
      prefixed.reserve(text.size() + 1);
      prefixed.push_back(' ');
      prefixed.append(text);
      text = prefixed;
    }
    std::string mapped;
    auto emit = [&](std::string_view piece, bool origin) {
      mapped.clear();
      byte_level_encode(piece, mapped);
      sink(mapped, origin);
    };
    if (!regex_) {
      emit(text, at_origin);
      return;
    }
    std::vector<Span> matches, spans;
    regex_->find_all(text, matches);
    split_spans(matches, text.size(), false, SplitBehavior::isolated, spans);
    for (const Span& s : spans) {
      if (s.first != s.second)
        emit(text.substr(s.first, s.second - s.first), at_origin && s.first == 0);
    }
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Pattern> regex_;
};

enum class PrependScheme { first, always, never };

// ref: pre_tokenizers/metaspace.rs
class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(char32_t replacement, PrependScheme scheme, bool split)
      : replacement_(replacement), scheme_(scheme), split_(split) {
    append_utf8(rep_, replacement);
  }
  void pre_tokenize(std::string_view text, bool at_origin, PieceSink sink) const override {
    std::string s;
    s.reserve(text.size() + rep_.size() * 4);
    // HF replaces spaces first, then prepends unless the text starts with the replacement, so a
    // leading ' ' counts as one.
    bool starts_with_rep = text[0] == ' ' || text.substr(0, rep_.size()) == rep_;
    bool prepend = !starts_with_rep && (scheme_ == PrependScheme::always ||
                                        (scheme_ == PrependScheme::first && at_origin));
    if (prepend) s += rep_;
    for (char c : text) {
      if (c == ' ') {
        s += rep_;
      } else {
        s.push_back(c);
      }
    }
    if (!split_) {
      sink(s, at_origin);
      return;
    }
    std::vector<Span> matches, spans;
    char32_t rep = replacement_;
    char_matches(
        s, [rep](char32_t c) { return c == rep; }, matches);
    split_spans(matches, s.size(), false, SplitBehavior::merged_with_next, spans);
    emit_spans(s, at_origin, spans, sink);
  }

 private:
  char32_t replacement_;
  std::string rep_;
  PrependScheme scheme_;
  bool split_;
};

// ref: pre_tokenizers/digits.rs: each digit alone, or runs of digits together.
class DigitsPreTokenizer final : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual) : individual_(individual) {}
  void pre_tokenize(std::string_view text, bool at_origin, PieceSink sink) const override {
    std::vector<Span> matches, spans;
    char_matches(
        text, [](char32_t c) { return is_numeric(c); }, matches);
    split_spans(matches, text.size(), false,
                individual_ ? SplitBehavior::isolated : SplitBehavior::contiguous, spans);
    emit_spans(text, at_origin, spans, sink);
  }

 private:
  bool individual_;
};

// ref: pre_tokenizers/whitespace.rs WhitespaceSplit: split on White_Space, dropping it.
class WhitespaceSplitPreTokenizer final : public PreTokenizer {
 public:
  void pre_tokenize(std::string_view text, bool at_origin, PieceSink sink) const override {
    std::vector<Span> matches, spans;
    char_matches(
        text, [](char32_t c) { return is_white_space(c); }, matches);
    split_spans(matches, text.size(), false, SplitBehavior::removed, spans);
    emit_spans(text, at_origin, spans, sink);
  }
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> v)
      : steps_(std::move(v)) {}
  void pre_tokenize(std::string_view text, bool at_origin, PieceSink sink) const override {
    run(0, text, at_origin, sink);
  }

 private:
  void run(size_t i, std::string_view text, bool at_origin, PieceSink sink) const {
    if (i == steps_.size()) {
      sink(text, at_origin);
      return;
    }
    steps_[i]->pre_tokenize(text, at_origin,
                            [&](std::string_view t, bool o) { run(i + 1, t, o, sink); });
  }
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

std::unique_ptr<PreTokenizer> PreTokenizer::from_json(const JNode& node) {
  std::string_view type = node.type();
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    JNode list = node.at("pretokenizers");
    if (!list.is_array()) list.fail("expected an array");
    size_t i = 0;
    for (JElem child : list.e.get_array()) steps.push_back(from_json(list.index(i++, child)));
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  if (type == "Split") {
    return std::make_unique<SplitPreTokenizer>(Pattern::from_json(node.at("pattern")),
                                               parse_behavior(node.at("behavior")),
                                               node.bool_or("invert", false));
  }
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(node.bool_or("add_prefix_space", true),
                                                   node.bool_or("use_regex", true));
  }
  if (type == "Metaspace") {
    // Files older than tokenizers 0.19 have add_prefix_space instead of prepend_scheme.
    PrependScheme scheme = PrependScheme::always;
    if (auto ps = node.get("prepend_scheme")) {
      std::string_view v = ps->str();
      if (v == "first") {
        scheme = PrependScheme::first;
      } else if (v == "always") {
        scheme = PrependScheme::always;
      } else if (v == "never") {
        scheme = PrependScheme::never;
      } else {
        ps->fail("expected \"first\", \"always\" or \"never\"");
      }
    } else if (!node.bool_or("add_prefix_space", true)) {
      scheme = PrependScheme::never;
    }
    return std::make_unique<MetaspacePreTokenizer>(node.character("replacement"), scheme,
                                                   node.bool_or("split", true));
  }
  if (type == "Digits") {
    return std::make_unique<DigitsPreTokenizer>(node.bool_or("individual_digits", false));
  }
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplitPreTokenizer>();
  node.unsupported("pre-tokenizer type \"" + std::string(type) + "\"");
}

}  // namespace tessera::tok
