// tokenizer.json "pre_tokenizer": Split (every behavior, invert), ByteLevel, Metaspace, Digits,
// WhitespaceSplit and Sequence, with the semantics of Hugging Face tokenizers'
// pre_tokenizers/*.rs. Pieces stream through a callback instead of being collected.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "tokenizer/function_ref.h"
#include "tokenizer/json_util.h"
#include "tokenizer/pattern.h"

namespace tessera::tok {

// Receives each non-empty piece. `at_origin`: the piece starts at offset 0 of the input text
// (HF's offsets_original().0 == 0), which Metaspace's prepend_scheme "first" looks at. The view is
// only valid during the call.
using PieceSink = FunctionRef<void(std::string_view text, bool at_origin)>;

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // `text` is non-empty, valid UTF-8.
  virtual void pre_tokenize(std::string_view text, bool at_origin, PieceSink sink) const = 0;

  // Throws Error(unsupported) for types tessera does not implement.
  static std::unique_ptr<PreTokenizer> from_json(const JNode& node);
};

// ref: tokenizers normalizer.rs SplitDelimiterBehavior.
enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

// Turns the matches of a pattern in a text of length n into the pieces HF's
// NormalizedString::split keeps for `behavior` (empty pieces included; callers drop them).
// `invert` swaps what counts as a match.
void split_spans(const std::vector<Span>& matches, size_t n, bool invert, SplitBehavior behavior,
                 std::vector<Span>& out);

}  // namespace tessera::tok
