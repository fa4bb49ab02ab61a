#include "grammar/compile.h"

#include "core/check.h"
#include "grammar/json_schema.h"
#include "grammar/parse.h"

namespace tessera::grammar {

namespace {

// prefix X suffix (separator prefix X suffix){0, max_count - 1} around the root X
// (OutputConstraint's tool-call form).
void wrap(ExprGrammar& g, const OutputConstraint& c) {
  if (c.prefix.empty() && c.suffix.empty() && c.max_count == 1) return;
  if (c.max_count == 0 || c.max_count < -1) fail_arg("max_count must be -1 or at least 1");
  if (c.max_count != 1 && c.separator.empty() && c.prefix.empty())
    fail_arg("repeated matches need a separator or a prefix");
  auto one = [&] {
    std::vector<Expr> s;
    if (!c.prefix.empty()) s.push_back(Expr::literal(c.prefix));
    s.push_back(Expr::ref(g.root));
    if (!c.suffix.empty()) s.push_back(Expr::literal(c.suffix));
    return Expr::seq(std::move(s));
  };
  std::vector<Expr> body{one()};
  if (c.max_count != 1) {
    std::vector<Expr> more;
    if (!c.separator.empty()) more.push_back(Expr::literal(c.separator));
    more.push_back(one());
    body.push_back(
        Expr::repeat(Expr::seq(std::move(more)), 0, c.max_count < 0 ? -1 : c.max_count - 1));
  }
  const std::string name = "wrapped-root";
  g.rules.push_back({name, Expr::seq(std::move(body))});
  g.root = name;
}

}  // namespace

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
  wrap(g, c);
  return std::make_shared<const Grammar>(lower(g));
}

}  // namespace tessera::grammar
