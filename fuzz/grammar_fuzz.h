// The grammar targets (GBNF, regex, JSON schema): the constraint text compiled to the byte-level
// grammar the engine runs (grammar/compile.h), as a request's response_format or grammar field
// is, then its matcher walked over a few bytes.
#pragma once

#include "grammar/compile.h"
#include "grammar/matcher.h"
#include "tessera/error.h"

namespace tessera::fuzz {

inline void compile_constraint(OutputConstraint::Kind kind, const uint8_t* data, size_t size) {
  OutputConstraint c;
  c.kind = kind;
  c.text.assign(reinterpret_cast<const char*>(data), size);
  c.field = "fuzz";
  try {
    grammar::Matcher m(grammar::compile(c));
    // A walk of up to 32 bytes, each the lowest byte that keeps the output valid.
    int32_t state = m.start();
    for (int step = 0; step < 32 && m.can_continue(state); ++step) {
      int32_t next = grammar::Matcher::kDead;
      for (int b = 0; b < 256 && next == grammar::Matcher::kDead; ++b)
        next = m.next(state, static_cast<uint8_t>(b));
      if (next == grammar::Matcher::kDead) break;
      state = next;
    }
    (void)m.accepting(state);
  } catch (const Error&) {
  }
}

}  // namespace tessera::fuzz
