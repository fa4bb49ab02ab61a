// Grammar expressions before lowering (grammar.h): what the GBNF and regex parsers produce and
// lower() turns into byte-level rules. Characters are Unicode code points here.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grammar/grammar.h"

namespace tessera::grammar {

struct CodeRange {
  uint32_t lo = 0, hi = 0;
};

struct Expr {
  enum class Kind { seq, alt, chars, ref, repeat };
  Kind kind = Kind::seq;
  std::vector<Expr> kids;         // seq, alt; repeat: kids[0]
  std::vector<CodeRange> ranges;  // chars: the code points matched
  std::string name;               // ref
  int min = 0, max = -1;          // repeat: counts (max -1: unbounded)

  static Expr seq(std::vector<Expr> k = {}) { return make(Kind::seq, std::move(k)); }
  static Expr alt(std::vector<Expr> k) { return make(Kind::alt, std::move(k)); }
  static Expr chars(std::vector<CodeRange> r);  // sorted and merged
  static Expr codepoint(uint32_t c) { return chars({{c, c}}); }
  static Expr literal(const std::string& utf8);  // a sequence of code points
  static Expr ref(std::string n) {
    Expr e;
    e.kind = Kind::ref;
    e.name = std::move(n);
    return e;
  }
  static Expr repeat(Expr x, int min, int max) {
    Expr e;
    e.kind = Kind::repeat;
    e.kids.push_back(std::move(x));
    e.min = min;
    e.max = max;
    return e;
  }

 private:
  static Expr make(Kind k, std::vector<Expr> kids) {
    Expr e;
    e.kind = k;
    e.kids = std::move(kids);
    return e;
  }
};

struct ExprGrammar {
  std::vector<std::pair<std::string, Expr>> rules;  // in source order; a name may repeat (GBNF
                                                    // appends its alternatives)
  std::string root = "root";
};

// The complement of `r` within Unicode scalar values (surrogates excluded).
std::vector<CodeRange> negate(const std::vector<CodeRange>& r);

// Byte-level rules for `g`. Throws Error(invalid_argument) naming the rule at fault: an
// undefined rule, no root rule, left recursion, a rule that can never finish, a count over
// 10000.
Grammar lower(const ExprGrammar& g);

}  // namespace tessera::grammar
