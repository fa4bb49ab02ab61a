#include "grammar/compile.h"

#include "core/check.h"
#include "grammar/json_schema.h"
#include "grammar/parse.h"

namespace tessera::grammar {

std::shared_ptr<const Grammar> compile(const OutputConstraint& c) {
  ExprGrammar g;
  switch (c.kind) {
    case OutputConstraint::Kind::none:
      fail_arg("no constraint to compile");
    case OutputConstraint::Kind::json_object:
      g = json_object_grammar();
      break;
    case OutputConstraint::Kind::json_schema:
      g = json_schema_grammar(c.text);
      break;
    case OutputConstraint::Kind::regex:
      g.rules.push_back({"root", parse_regex(c.text)});
      break;
    case OutputConstraint::Kind::choice: {
      if (c.choices.empty()) fail_arg("the choice list is empty");
      std::vector<Expr> alts;
      for (const std::string& s : c.choices) {
        if (s.empty()) fail_arg("a choice is empty");
        alts.push_back(Expr::literal(s));
      }
      g.rules.push_back({"root", Expr::alt(std::move(alts))});
      break;
    }
    case OutputConstraint::Kind::grammar:
      g = parse_gbnf(c.text);
      break;
  }
  return std::make_shared<const Grammar>(lower(g));
}

}  // namespace tessera::grammar
