// Helpers of the grammar tests: compile a constraint and ask whether a text matches it.
#pragma once

#include <memory>
#include <string>

#include "grammar/compile.h"
#include "grammar/matcher.h"

namespace tessera::testing {

inline std::shared_ptr<const grammar::Grammar> compile_kind(OutputConstraint::Kind k,
                                                            const std::string& text) {
  OutputConstraint c;
  c.kind = k;
  c.text = text;
  return grammar::compile(c);
}
inline std::shared_ptr<const grammar::Grammar> gbnf(const std::string& t) {
  return compile_kind(OutputConstraint::Kind::grammar, t);
}
inline std::shared_ptr<const grammar::Grammar> regex(const std::string& t) {
  return compile_kind(OutputConstraint::Kind::regex, t);
}
inline std::shared_ptr<const grammar::Grammar> schema(const std::string& t) {
  return compile_kind(OutputConstraint::Kind::json_schema, t);
}

// The whole text is a complete match.
inline bool matches(const std::shared_ptr<const grammar::Grammar>& g, const std::string& s) {
  grammar::Matcher m(g);
  const int32_t st = m.next(m.start(), s);
  return st != grammar::Matcher::kDead && m.accepting(st);
}
// The text can be continued to a match.
inline bool viable(const std::shared_ptr<const grammar::Grammar>& g, const std::string& s) {
  grammar::Matcher m(g);
  return m.next(m.start(), s) != grammar::Matcher::kDead;
}

}  // namespace tessera::testing
