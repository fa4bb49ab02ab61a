// The patterns of tokenizer.json ({"String": s} or {"Regex": r}) used by the Split
// pre-tokenizer and the Replace normalizer/decoder. Hugging Face tokenizers runs regexes with
// Oniguruma (Ruby syntax); tessera runs them with PCRE2 (JIT, UTF, Unicode properties) after
// rewriting the escapes whose meaning differs: \s (Oniguruma's includes U+0085), \w, \d, \h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/json_util.h"

namespace tessera::tok {

using Span = std::pair<uint32_t, uint32_t>;  // [begin, end) byte offsets

class Pattern {
 public:
  virtual ~Pattern() = default;
  // Every match, left to right, non-overlapping; an empty match right after the previous match
  // is skipped (the onig crate's find_iter). `out` is cleared first.
  virtual void find_all(std::string_view text, std::vector<Span>& out) const = 0;

  // {"String": "..."} or {"Regex": "..."}.
  static std::unique_ptr<Pattern> from_json(const JNode& node);
  static std::unique_ptr<Pattern> literal(std::string s);
  // Throws Error(invalid_model) naming `where` when the regex does not compile.
  static std::unique_ptr<Pattern> regex(const std::string& onig_pattern, const std::string& where);
};

// Oniguruma (Ruby syntax) -> PCRE2 pattern text. Exposed for tests.
std::string onig_to_pcre2(std::string_view pattern);

}  // namespace tessera::tok
