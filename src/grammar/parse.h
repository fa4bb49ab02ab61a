// The grammar source forms, each parsed to expressions (expr.h): llama.cpp's GBNF
// (grammars/README.md there) and regular expressions (the subset JSON Schema's "pattern" and
// vLLM's guided_regex use). Both throw Error(invalid_argument) naming the offset at fault.
#pragma once

#include <string>
#include <string_view>

#include "grammar/expr.h"

namespace tessera::grammar {

// GBNF: `name ::= alternatives`, "literals" and [classes] with \n \t \r \\ \" \] \xHH \uHHHH
// \UHHHHHHHH escapes, `.`, ( groups ), postfix * + ? {m} {m,} {m,n}, # comments; root `root`.
ExprGrammar parse_gbnf(std::string_view src);

// A regex matched in full (anchors ^ and $ at the ends are accepted and ignored): literals,
// escapes (\d \w \s \D \W \S, \n \t \r \f \v, \xHH, \uHHHH, escaped punctuation), [classes] with
// ranges and negation, `.` (any character but \n), (groups), (?:groups), |, * + ? {m} {m,}
// {m,n} (lazy forms accepted; a matcher of the whole output cannot tell them apart).
Expr parse_regex(std::string_view src);

}  // namespace tessera::grammar
