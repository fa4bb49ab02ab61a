// The parser's internals, shared by jinja_parser.cpp (statements, the name checks) and
// jinja_parser_expr.cpp (expressions). Not part of the interpreter's interface.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"

namespace tessera::jinja {

constexpr int kMaxDepth = 120;  // nesting of expressions and blocks (bounds recursion)

std::string describe(const Token& t);

class Parser {
 public:
  explicit Parser(const std::vector<Token>& toks) : t_(toks) {}

  Body parse_all() {
    Body b = parse_body({});
    if (cur().kind != Tok::Eof) fail_here("unexpected " + describe(cur()));
    return b;
  }

  const Token& cur() const { return t_[p_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  void advance() {
    if (p_ + 1 < t_.size()) ++p_;
  }
  bool is_op(const char* op) const { return cur().kind == Tok::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().kind == Tok::Name && cur().text == n; }
  [[noreturn]] void fail_here(const std::string& msg) const {
    syntax_error(cur().line, cur().col, msg);
  }
  void expect_op(const char* op) {
    if (!is_op(op)) fail_here(std::string("expected '") + op + "', got " + describe(cur()));
    advance();
  }
  std::string expect_name() {
    if (cur().kind != Tok::Name) fail_here("expected a name, got " + describe(cur()));
    std::string n = cur().text;
    advance();
    return n;
  }
  // Where a block body starts: Jinja accepts an optional ':' (Python style) before "%}".
  void expect_body_start() {
    if (is_op(":")) advance();
    expect_block_end();
  }
  void expect_block_end() {
    if (cur().kind != Tok::BlockEnd)
      fail_here("expected end of statement block, got " + describe(cur()));
    advance();
  }

  struct Depth {
    explicit Depth(Parser& p) : p(p) {
      if (++p.depth_ > kMaxDepth) p.fail_here("template nested too deeply");
    }
    ~Depth() { --p.depth_; }
    Parser& p;
  };

  ExprPtr node(EK k, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = at.line;
    e->col = at.col;
    return e;
  }

  // ---- statements ----

  Body parse_body(std::initializer_list<const char*> ends);

  void end_tag(const char* name);

  StmtPtr parse_statement();

  void parse_targets(Stmt& s);

  void parse_params(Stmt& s);

  // ---- expressions ----

  ExprPtr parse_expression(bool with_condexpr = true);

  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens, const char* extra_end = nullptr);

  ExprPtr parse_condexpr();

  ExprPtr binary(const Token& at, const std::string& op, ExprPtr l, ExprPtr r);

  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);

  ExprPtr parse_primary();

  ExprPtr parse_postfix(ExprPtr e);

  ExprPtr parse_subscript();

  ExprPtr parse_subscribed();

  void parse_args(Expr& e);

  ExprPtr parse_call(ExprPtr callee, EK kind, const Token& at);

  ExprPtr parse_filter_expr(ExprPtr e);

  ExprPtr parse_filter_chain(ExprPtr operand, bool leading_pipe = true);

  ExprPtr parse_test(ExprPtr e);

  const std::vector<Token>& t_;
  size_t p_ = 0;
  int depth_ = 0;
};

}  // namespace tessera::jinja
