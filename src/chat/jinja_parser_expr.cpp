// Expression parsing with Jinja's precedence: conditional < or < and < not < comparisons
// < + - < ~ < * / // % < ** < unary - + < postfix (. [] ()) and filters/tests.
// ref: jinja2/parser.py (parse_condexpr ... parse_primary, parse_postfix, parse_filter_expr).
#include <cerrno>
#include <cstdlib>

#include "chat/jinja_parser_impl.h"

namespace tessera::jinja {

ExprPtr Parser::parse_expression(bool with_condexpr) {
  return with_condexpr ? parse_condexpr() : parse_or();
}

// A comma-separated list becomes a tuple; a single expression stays itself.
ExprPtr Parser::parse_tuple(bool with_condexpr, bool explicit_parens, const char* extra_end) {
  const Token start = cur();
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    bool end = cur().kind == Tok::VarEnd || cur().kind == Tok::BlockEnd || cur().kind == Tok::Eof ||
               is_op(")") || (extra_end && is_name(extra_end)) || (!with_condexpr && is_name("if"));
    if (end) break;
    items.push_back(parse_expression(with_condexpr));
    if (is_op(","))
      is_tuple = true;
    else
      break;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens) fail_here("expected an expression, got " + describe(cur()));
  }
  auto t = node(EK::Tuple, start);
  t->args = std::move(items);
  return t;
}

ExprPtr Parser::parse_condexpr() {
  Depth d(*this);
  ExprPtr e = parse_or();
  while (is_name("if")) {
    const Token at = cur();
    advance();
    ExprPtr cond = parse_or();
    ExprPtr other;
    if (is_name("else")) {
      advance();
      other = parse_condexpr();
    }
    auto c = node(EK::Cond, at);
    c->args.push_back(std::move(cond));
    c->args.push_back(std::move(e));
    c->args.push_back(std::move(other));
    e = std::move(c);
  }
  return e;
}

ExprPtr Parser::binary(const Token& at, const std::string& op, ExprPtr l, ExprPtr r) {
  auto b = node(EK::Binary, at);
  b->name = op;
  b->args.push_back(std::move(l));
  b->args.push_back(std::move(r));
  return b;
}

ExprPtr Parser::parse_or() {
  ExprPtr e = parse_and();
  while (is_name("or")) {
    const Token at = cur();
    advance();
    e = binary(at, "or", std::move(e), parse_and());
  }
  return e;
}

ExprPtr Parser::parse_and() {
  ExprPtr e = parse_not();
  while (is_name("and")) {
    const Token at = cur();
    advance();
    e = binary(at, "and", std::move(e), parse_not());
  }
  return e;
}

ExprPtr Parser::parse_not() {
  Depth d(*this);
  if (is_name("not")) {
    auto n = node(EK::Not, cur());
    advance();
    n->args.push_back(parse_not());
    return n;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const Token at = cur();
  ExprPtr first = parse_math1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (cur().kind == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                  cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
      op = cur().text;
      advance();
    } else if (is_name("in")) {
      op = "in";
      advance();
    } else if (is_name("not") && peek().kind == Tok::Name && peek().text == "in") {
      op = "notin";
      advance();
      advance();
    } else {
      break;
    }
    if (!cmp) {
      cmp = node(EK::Compare, at);
      cmp->args.push_back(std::move(first));
    }
    cmp->ops.push_back(op);
    cmp->args.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr Parser::parse_math1() {
  ExprPtr e = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token at = cur();
    advance();
    e = binary(at, at.text, std::move(e), parse_concat());
  }
  return e;
}

ExprPtr Parser::parse_concat() {
  ExprPtr e = parse_math2();
  while (is_op("~")) {
    const Token at = cur();
    advance();
    e = binary(at, "~", std::move(e), parse_math2());
  }
  return e;
}

ExprPtr Parser::parse_math2() {
  ExprPtr e = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token at = cur();
    advance();
    e = binary(at, at.text, std::move(e), parse_pow());
  }
  return e;
}

ExprPtr Parser::parse_pow() {
  ExprPtr e = parse_unary(true);
  while (is_op("**")) {
    const Token at = cur();
    advance();
    e = binary(at, "**", std::move(e), parse_unary(true));
  }
  return e;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  Depth d(*this);
  ExprPtr e;
  if (is_op("-") || is_op("+")) {
    e = node(is_op("-") ? EK::Neg : EK::Pos, cur());
    advance();
    e->args.push_back(parse_unary(false));
  } else {
    e = parse_primary();
  }
  e = parse_postfix(std::move(e));
  if (with_filter) e = parse_filter_expr(std::move(e));
  return e;
}

ExprPtr Parser::parse_primary() {
  Depth d(*this);
  const Token tk = cur();
  switch (tk.kind) {
    case Tok::Name: {
      advance();
      auto e = node(EK::Literal, tk);
      if (tk.text == "true" || tk.text == "True") {
        e->literal = Value::boolean(true);
      } else if (tk.text == "false" || tk.text == "False") {
        e->literal = Value::boolean(false);
      } else if (tk.text == "none" || tk.text == "None") {
        e->literal = Value::none();
      } else {
        e->kind = EK::Name;
        e->name = tk.text;
      }
      return e;
    }
    case Tok::String: {
      std::string s;
      while (cur().kind == Tok::String) {
        s += cur().text;
        advance();
      }
      auto e = node(EK::Literal, tk);
      e->literal = Value::string(std::move(s));
      return e;
    }
    case Tok::Int:
    case Tok::Float: {
      advance();
      auto e = node(EK::Literal, tk);
      std::string digits;
      for (char c : tk.text)
        if (c != '_') digits += c;
      errno = 0;
      if (tk.kind == Tok::Float) {
        e->literal = Value::number(std::strtod(digits.c_str(), nullptr));
      } else {
        int base = 10;
        size_t off = 0;
        if (digits.size() > 1 && digits[0] == '0' &&
            std::isalpha(static_cast<unsigned char>(digits[1]))) {
          char b = static_cast<char>(std::tolower(digits[1]));
          base = b == 'x' ? 16 : b == 'o' ? 8 : 2;
          off = 2;
        }
        long long v = std::strtoll(digits.c_str() + off, nullptr, base);
        if (errno == ERANGE) syntax_error(tk.line, tk.col, "integer literal too large");
        e->literal = Value::integer(v);
      }
      return e;
    }
    case Tok::Op:
      if (tk.text == "(") {
        advance();
        ExprPtr e = parse_tuple(true, true);
        expect_op(")");
        return e;
      }
      if (tk.text == "[") {
        advance();
        auto e = node(EK::List, tk);
        while (!is_op("]")) {
          if (!e->args.empty()) expect_op(",");
          if (is_op("]")) break;
          e->args.push_back(parse_expression());
        }
        advance();
        return e;
      }
      if (tk.text == "{") {
        advance();
        auto e = node(EK::Dict, tk);
        while (!is_op("}")) {
          if (!e->args.empty()) expect_op(",");
          if (is_op("}")) break;
          e->args.push_back(parse_expression());
          expect_op(":");
          e->args.push_back(parse_expression());
        }
        advance();
        return e;
      }
      break;
    default:
      break;
  }
  fail_here("unexpected " + describe(tk));
}

ExprPtr Parser::parse_postfix(ExprPtr e) {
  while (true) {
    const Token at = cur();
    if (is_op(".")) {
      advance();
      if (cur().kind == Tok::Name) {
        auto g = node(EK::GetAttr, at);
        g->name = cur().text;
        g->args.push_back(std::move(e));
        e = std::move(g);
        advance();
      } else if (cur().kind == Tok::Int) {
        auto g = node(EK::GetItem, at);
        g->args.push_back(std::move(e));
        auto idx = node(EK::Literal, cur());
        idx->literal = Value::integer(std::strtoll(cur().text.c_str(), nullptr, 10));
        g->args.push_back(std::move(idx));
        e = std::move(g);
        advance();
      } else {
        fail_here("expected name or number after '.'");
      }
    } else if (is_op("[")) {
      advance();
      auto g = node(EK::GetItem, at);
      g->args.push_back(std::move(e));
      g->args.push_back(parse_subscript());
      expect_op("]");
      e = std::move(g);
    } else if (is_op("(")) {
      e = parse_call(std::move(e), EK::Call, at);
    } else {
      return e;
    }
  }
}

// "[a]", "[a, b]" (a tuple), "[]" (the empty tuple), slices "[a:b:c]". ref:
// Parser.parse_subscript.
ExprPtr Parser::parse_subscript() {
  const Token at = cur();
  std::vector<ExprPtr> items;
  while (!is_op("]")) {
    if (!items.empty()) expect_op(",");
    items.push_back(parse_subscribed());
  }
  if (items.size() == 1) return std::move(items[0]);
  auto t = node(EK::Tuple, at);
  t->args = std::move(items);
  return t;
}

ExprPtr Parser::parse_subscribed() {
  const Token at = cur();
  ExprPtr parts[3];
  if (is_op(":")) {
    advance();
  } else {
    parts[0] = parse_expression();
    if (!is_op(":")) return std::move(parts[0]);
    advance();
  }
  if (!is_op("]") && !is_op(",") && !is_op(":")) parts[1] = parse_expression();
  if (is_op(":")) {
    advance();
    if (!is_op("]") && !is_op(",")) parts[2] = parse_expression();
  }
  auto sl = node(EK::Slice, at);
  for (auto& p : parts) sl->args.push_back(std::move(p));
  return sl;
}

// Arguments "(a, b, k=v)" after `callee` (for calls) or after a filter/test name.
void Parser::parse_args(Expr& e) {
  expect_op("(");
  bool any = false;
  while (!is_op(")")) {
    if (any) expect_op(",");
    if (is_op(")")) break;
    any = true;
    if (is_op("*") || is_op("**")) fail_here("*args and **kwargs are not supported");
    if (cur().kind == Tok::Name && peek().kind == Tok::Op && peek().text == "=") {
      std::string k = cur().text;
      advance();
      advance();
      e.kwargs.emplace_back(k, parse_expression());
    } else {
      if (!e.kwargs.empty()) fail_here("positional argument follows keyword argument");
      e.args.push_back(parse_expression());
    }
  }
  advance();
}

ExprPtr Parser::parse_call(ExprPtr callee, EK kind, const Token& at) {
  auto c = node(kind, at);
  c->args.push_back(std::move(callee));
  parse_args(*c);
  return c;
}

ExprPtr Parser::parse_filter_expr(ExprPtr e) {
  while (true) {
    if (is_op("|")) {
      e = parse_filter_chain(std::move(e));
    } else if (is_name("is")) {
      e = parse_test(std::move(e));
    } else if (is_op("(")) {
      e = parse_call(std::move(e), EK::Call, cur());
    } else {
      return e;
    }
  }
}

// "| f(args) | g ..." applied to `operand` (null for filter blocks / set blocks).
ExprPtr Parser::parse_filter_chain(ExprPtr operand, bool leading_pipe) {
  bool first = true;
  do {
    if (leading_pipe || !first) expect_op("|");
    first = false;
    const Token at = cur();
    auto f = node(EK::Filter, at);
    f->name = expect_name();
    while (is_op(".")) {  // dotted filter names
      advance();
      f->name += "." + expect_name();
    }
    f->args.push_back(std::move(operand));
    if (is_op("(")) parse_args(*f);
    operand = std::move(f);
  } while (is_op("|"));
  return operand;
}

ExprPtr Parser::parse_test(ExprPtr e) {
  const Token at = cur();
  advance();  // is
  auto t = node(EK::Test, at);
  if (is_name("not")) {
    t->negated = true;
    advance();
  }
  t->name = expect_name();
  while (is_op(".")) {  // dotted test names
    advance();
    t->name += "." + expect_name();
  }
  t->args.push_back(std::move(e));
  const Token& c = cur();
  if (is_op("(")) {
    parse_args(*t);
  } else if ((c.kind == Tok::Name || c.kind == Tok::String || c.kind == Tok::Int ||
              c.kind == Tok::Float || is_op("[") || is_op("{")) &&
             !(is_name("else") || is_name("or") || is_name("and"))) {
    if (is_name("is")) fail_here("you cannot chain multiple tests with is");
    t->args.push_back(parse_postfix(parse_primary()));
  }
  return t;
}

}  // namespace tessera::jinja
