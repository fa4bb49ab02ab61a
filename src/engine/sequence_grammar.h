// One sequence's structured output in the scheduler (docs/GRAMMAR.md, "In the scheduler"): its
// compiled constraint's state after the ids so far, advanced with each collected id, and the
// logit mask of its next pick. Errors (a grammar that proves too ambiguous while decoding, a
// vocabulary that cannot continue) are the sequence's own, returned as messages, so that one
// request's grammar never fails the others in its step.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "grammar/token_mask.h"

namespace tessera {

class SequenceGrammar {
 public:
  explicit SequenceGrammar(std::shared_ptr<grammar::TokenGrammar> g);

  enum class Next { more, complete, error };
  // The sequence took `id` (not a stop id): more (keep sampling), complete (the output is a
  // complete match and nothing may follow: the request ends with finish reason stop) or error.
  Next take(int32_t id, std::string& error);
  // The next pick's mask into m (row left to the caller): the grammar's allowed tokens, and
  // stop_ids once the output is a complete match. The mask is held in `held` for the sample's
  // duration. False with `error` set when the mask cannot be made.
  bool mask(LogitMask& m, std::span<const int32_t> stop_ids,
            std::vector<std::shared_ptr<const grammar::TokenMask>>& held, std::string& error);

 private:
  std::shared_ptr<grammar::TokenGrammar> g_;
  int32_t state_;
};

}  // namespace tessera
