// Statement parsing (for/if/set/macro/call/filter/with/break/continue/generation/block) and
// the compile-time check of filter and test names. ref: jinja2/parser.py, jinja2/compiler.py.
#include "chat/jinja_parser.h"

#include "chat/jinja_filters.h"
#include "chat/jinja_parser_impl.h"

namespace tessera::jinja {

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

// Parses until "{% <one of ends> ..." (not consumed) or the end of the template.
Body Parser::parse_body(std::initializer_list<const char*> ends) {
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
void Parser::end_tag(const char* name) {
  advance();  // {%
  if (!is_name(name)) fail_here(std::string("expected '") + name + "'");
  advance();
  expect_block_end();
}

StmtPtr Parser::parse_statement() {
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

void Parser::parse_targets(Stmt& s) {
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

void Parser::parse_params(Stmt& s) {
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

namespace {

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
