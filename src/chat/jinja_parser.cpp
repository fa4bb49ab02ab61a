#include "chat/jinja_parser.h"

#include "chat/jinja_filters.h"

#include <cerrno>
#include <cstdlib>
#include <initializer_list>

namespace tessera::jinja {
namespace {

constexpr int kMaxDepth = 200;  // nesting of expressions and blocks (bounds recursion)

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::Data:
      return "template data";
    case Tok::VarBegin:
      return "'{{'";
    case Tok::VarEnd:
      return "end of print statement";
    case Tok::BlockBegin:
      return "'{%'";
    case Tok::BlockEnd:
      return "end of statement block";
    case Tok::Eof:
      return "end of template";
    case Tok::String:
      return "string";
    default:
      return "'" + t.text + "'";
  }
}

class Parser {
 public:
  explicit Parser(const std::vector<Token>& toks) : t_(toks) {}

  Body parse_all() {
    Body b = parse_body({});
    if (cur().kind != Tok::Eof) fail_here("unexpected " + describe(cur()));
    return b;
  }

 private:
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

  // Parses until "{% <one of ends> ..." (not consumed) or the end of the template.
  Body parse_body(std::initializer_list<const char*> ends) {
    Depth d(*this);
    Body body;
    while (true) {
      const Token& tk = cur();
      if (tk.kind == Tok::Eof) {
        if (ends.size() == 0) return body;
        std::string want;
        for (const char* e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
        fail_here("unexpected end of template, expected " + want);
      }
      if (tk.kind == Tok::Data) {
        auto s = std::make_unique<Stmt>();
        s->kind = SK::Output;
        s->text = tk.text;
        body.push_back(std::move(s));
        advance();
      } else if (tk.kind == Tok::VarBegin) {
        auto s = std::make_unique<Stmt>();
        s->kind = SK::Emit;
        s->line = tk.line;
        s->col = tk.col;
        advance();
        s->expr = parse_tuple(true, false);
        if (cur().kind != Tok::VarEnd)
          fail_here("expected end of print statement, got " + describe(cur()));
        advance();
        body.push_back(std::move(s));
      } else if (tk.kind == Tok::BlockBegin) {
        const Token& name = peek();
        if (name.kind == Tok::Name)
          for (const char* e : ends)
            if (name.text == e) return body;
        advance();
        body.push_back(parse_statement());
      } else {
        fail_here("unexpected " + describe(tk));
      }
    }
  }

  // After "{%" of a block's end tag: consumes "{% name %}".
  void end_tag(const char* name) {
    advance();  // {%
    if (!is_name(name)) fail_here(std::string("expected '") + name + "'");
    advance();
    expect_block_end();
  }

  StmtPtr parse_statement() {
    const Token tk = cur();
    if (tk.kind != Tok::Name) fail_here("expected a statement name, got " + describe(tk));
    auto s = std::make_unique<Stmt>();
    s->line = tk.line;
    s->col = tk.col;
    const std::string& n = tk.text;
    advance();
    if (n == "if") {
      s->kind = SK::If;
      ExprPtr c = parse_tuple(true, false);
      expect_body_start();
      while (true) {
        Body b = parse_body({"elif", "else", "endif"});
        s->branches.emplace_back(std::move(c), std::move(b));
        advance();  // {%
        std::string which = cur().text;
        advance();
        if (which == "elif") {
          c = parse_tuple(true, false);
          expect_body_start();
          continue;
        }
        if (which == "else")
          expect_body_start();
        else
          expect_block_end();
        if (which == "else") {
          s->else_body = parse_body({"endif"});
          end_tag("endif");
        }
        break;
      }
    } else if (n == "for") {
      s->kind = SK::For;
      parse_targets(*s);
      if (!is_name("in")) fail_here("expected 'in', got " + describe(cur()));
      advance();
      s->expr = parse_tuple(false, false, "recursive");
      if (is_name("if")) {
        advance();
        s->cond = parse_expression();
      }
      if (is_name("recursive")) {
        advance();
        s->recursive = true;
      }
      expect_body_start();
      s->body = parse_body({"endfor", "else"});
      advance();
      bool has_else = is_name("else");
      advance();
      if (has_else)
        expect_body_start();
      else
        expect_block_end();
      if (has_else) {
        s->else_body = parse_body({"endfor"});
        end_tag("endfor");
      }
    } else if (n == "set") {
      // Targets: names or namespace attributes (ns.attr), several for tuple unpacking.
      while (true) {
        s->targets.push_back(expect_name());
        s->attrs.emplace_back();
        if (is_op(".")) {
          advance();
          s->attrs.back() = expect_name();
        }
        if (!is_op(",")) break;
        advance();
        s->target_tuple = true;
      }
      if (is_op("=")) {
        advance();
        s->kind = SK::Set;
        s->expr = parse_tuple(true, false);
        expect_block_end();
      } else {
        if (s->target_tuple) fail_here("expected '=', got " + describe(cur()));
        s->kind = SK::SetBlock;
        if (is_op("|")) s->expr = parse_filter_chain(nullptr);
        expect_body_start();
        s->body = parse_body({"endset"});
        end_tag("endset");
      }
    } else if (n == "macro") {
      s->kind = SK::Macro;
      s->text = expect_name();
      parse_params(*s);
      expect_body_start();
      s->body = parse_body({"endmacro"});
      end_tag("endmacro");
    } else if (n == "call") {
      s->kind = SK::CallBlock;
      if (is_op("(")) parse_params(*s);
      s->expr = parse_expression();
      if (s->expr->kind != EK::Call) fail_here("expected a call");
      expect_body_start();
      s->body = parse_body({"endcall"});
      end_tag("endcall");
    } else if (n == "filter") {
      s->kind = SK::FilterBlock;
      s->expr = parse_filter_chain(nullptr, /*leading_pipe=*/false);
      expect_body_start();
      s->body = parse_body({"endfilter"});
      end_tag("endfilter");
    } else if (n == "with") {
      s->kind = SK::With;
      while (cur().kind != Tok::BlockEnd && !is_op(":")) {
        if (!s->assigns.empty()) expect_op(",");
        std::string name = expect_name();
        expect_op("=");
        s->assigns.emplace_back(name, parse_expression());
      }
      expect_body_start();
      s->body = parse_body({"endwith"});
      end_tag("endwith");
    } else if (n == "break" || n == "continue") {
      s->kind = n == "break" ? SK::Break : SK::Continue;
      expect_block_end();
    } else if (n == "generation" || n == "block") {
      // {% generation %} is transformers' assistant-mask marker: renders its body unchanged.
      s->kind = SK::Block;
      if (n == "block") expect_name();
      expect_body_start();
      s->body = n == "block" ? parse_body({"endblock"}) : parse_body({"endgeneration"});
      advance();  // {%
      advance();  // endblock / endgeneration
      if (n == "block" && cur().kind == Tok::Name) advance();
      expect_block_end();
    } else {
      syntax_error(tk.line, tk.col, "encountered unknown tag '" + n + "'");
    }
    return s;
  }

  void parse_targets(Stmt& s) {
    bool paren = is_op("(");
    if (paren) advance();
    s.targets.push_back(expect_name());
    while (is_op(",")) {
      advance();
      s.target_tuple = true;
      if (paren && is_op(")")) break;
      s.targets.push_back(expect_name());
    }
    if (paren) {
      s.target_tuple = true;
      expect_op(")");
    }
  }

  void parse_params(Stmt& s) {
    expect_op("(");
    while (!is_op(")")) {
      if (!s.params.empty()) expect_op(",");
      if (is_op(")")) break;
      Param p;
      p.name = expect_name();
      if (is_op("=")) {
        advance();
        p.default_value = parse_expression();
      } else if (!s.params.empty() && s.params.back().default_value) {
        fail_here("non-default argument follows default argument");
      }
      s.params.push_back(std::move(p));
    }
    advance();
  }

  // ---- expressions ----

  ExprPtr parse_expression(bool with_condexpr = true) {
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  // A comma-separated list becomes a tuple; a single expression stays itself.
  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens, const char* extra_end = nullptr) {
    const Token start = cur();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      bool end = cur().kind == Tok::VarEnd || cur().kind == Tok::BlockEnd ||
                 cur().kind == Tok::Eof || is_op(")") || (extra_end && is_name(extra_end)) ||
                 (!with_condexpr && is_name("if"));
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

  ExprPtr parse_condexpr() {
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

  ExprPtr binary(const Token& at, const std::string& op, ExprPtr l, ExprPtr r) {
    auto b = node(EK::Binary, at);
    b->name = op;
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return b;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const Token at = cur();
      advance();
      e = binary(at, "or", std::move(e), parse_and());
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const Token at = cur();
      advance();
      e = binary(at, "and", std::move(e), parse_not());
    }
    return e;
  }
  ExprPtr parse_not() {
    Depth d(*this);
    if (is_name("not")) {
      auto n = node(EK::Not, cur());
      advance();
      n->args.push_back(parse_not());
      return n;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    const Token at = cur();
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().kind == Tok::Op &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
           cur().text == ">" || cur().text == ">=")) {
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
  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token at = cur();
      advance();
      e = binary(at, at.text, std::move(e), parse_concat());
    }
    return e;
  }
  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const Token at = cur();
      advance();
      e = binary(at, "~", std::move(e), parse_math2());
    }
    return e;
  }
  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token at = cur();
      advance();
      e = binary(at, at.text, std::move(e), parse_pow());
    }
    return e;
  }
  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const Token at = cur();
      advance();
      e = binary(at, "**", std::move(e), parse_unary(true));
    }
    return e;
  }
  ExprPtr parse_unary(bool with_filter) {
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

  ExprPtr parse_primary() {
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

  ExprPtr parse_postfix(ExprPtr e) {
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
  ExprPtr parse_subscript() {
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

  ExprPtr parse_subscribed() {
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
  void parse_args(Expr& e) {
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

  ExprPtr parse_call(ExprPtr callee, EK kind, const Token& at) {
    auto c = node(kind, at);
    c->args.push_back(std::move(callee));
    parse_args(*c);
    return c;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
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
  ExprPtr parse_filter_chain(ExprPtr operand, bool leading_pipe = true) {
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

  ExprPtr parse_test(ExprPtr e) {
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

  const std::vector<Token>& t_;
  size_t p_ = 0;
  int depth_ = 0;
};

// Unknown filter and test names are compile-time errors outside if-blocks and conditional
// expressions (jinja2 CodeGenerator._filter_test_common with frame.soft_frame).
void check_names(const Expr* e, bool soft) {
  if (!e) return;
  if (e->kind == EK::Cond) soft = true;
  if (!soft && e->kind == EK::Filter && !is_jinja_filter(e->name))
    syntax_error(e->line, e->col, "no filter named '" + e->name + "'");
  if (!soft && e->kind == EK::Test && !is_jinja_test(e->name))
    syntax_error(e->line, e->col, "no test named '" + e->name + "'");
  for (const auto& a : e->args) check_names(a.get(), soft);
  for (const auto& kv : e->kwargs) check_names(kv.second.get(), soft);
}

void check_names(const Body& body, bool soft) {
  // Only an if statement (its tests and bodies) is a soft frame; loop, macro, call, filter,
  // with and set-block bodies get fresh frames that are not soft.
  for (const auto& s : body) {
    const bool in_if = soft || s->kind == SK::If;
    for (const auto& [c, b] : s->branches) {
      check_names(c.get(), in_if);
      check_names(b, in_if);
    }
    for (const auto& a : s->assigns) check_names(a.second.get(), soft);
    switch (s->kind) {
      case SK::Emit:
      case SK::Set:
      case SK::CallBlock:
        check_names(s->expr.get(), soft);
        break;
      case SK::For:
        check_names(s->expr.get(), soft);
        check_names(s->cond.get(), false);
        break;
      default:
        check_names(s->expr.get(), false);
    }
    for (const auto& p : s->params) check_names(p.default_value.get(), false);
    check_names(s->body, false);
    check_names(s->else_body, s->kind == SK::If ? in_if : false);
  }
}

}  // namespace

Body parse_template(const std::vector<Token>& tokens) {
  Body b = Parser(tokens).parse_all();
  check_names(b, false);
  return b;
}

}  // namespace tessera::jinja
