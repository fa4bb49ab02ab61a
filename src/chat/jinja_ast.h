// The syntax tree of a parsed chat template. ref: jinja2/nodes.py (a subset).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace tessera::jinja {

enum class EK {
  Literal,  // literal
  Name,     // name
  GetAttr,  // args[0].name
  GetItem,  // args[0][args[1]]
  Slice,    // [args[0]:args[1]:args[2]] (null parts allowed), only as GetItem's index
  Call,     // args[0](args[1..], kwargs)
  Filter,   // args[0] | name(args[1..], kwargs)
  Test,     // args[0] is [not] name(args[1..], kwargs)
  Not,      // not args[0]
  Neg,      // -args[0]
  Pos,      // +args[0]
  Binary,   // args[0] name args[1]: + - * / // % ** ~ and or
  Compare,  // args[0] ops[0] args[1] ops[1] args[2] ...: == != < <= > >= in notin
  Cond,     // args[1] if args[0] else args[2] (args[2] may be null)
  List,     // [args...]
  Tuple,    // (args...)
  Dict,     // {args[0]: args[1], ...}
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  EK kind;
  int line = 0, col = 0;
  Value literal;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;
};

enum class SK {
  Output,       // text
  Emit,         // {{ expr }}
  If,           // branches, else_body
  For,          // for targets in expr [if cond]: body [else: else_body]
  Set,          // set targets = expr; a target with attrs[k] set is namespace attribute ns.attr
  SetBlock,     // set targets[0] %}body{% endset (filter chain in expr, may be null)
  Macro,        // macro name(params) body
  CallBlock,    // call macro(...) body: body is passed as caller()
  FilterBlock,  // filter chain applied to body's output (expr with a null operand)
  With,         // with assignments: body
  Break,
  Continue,
  Block,  // a plain sequence (generation, block)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Param {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct Stmt {
  SK kind;
  int line = 0, col = 0;
  std::string text;                  // Output text; Macro name
  std::vector<std::string> attrs;    // Set/SetBlock: per target, a namespace attribute or ""
  ExprPtr expr;                      // Emit / For iterable / Set value / CallBlock call
  ExprPtr cond;                      // For filter
  std::vector<std::string> targets;  // For / Set / SetBlock names
  bool target_tuple = false;         // "for a, b in ..." / "set a, b = ..."
  std::vector<std::pair<ExprPtr, Body>> branches;  // If
  Body body, else_body;
  std::vector<Param> params;                             // Macro / CallBlock caller params
  std::vector<std::pair<std::string, ExprPtr>> assigns;  // With
  bool recursive = false;                                // For ... recursive
};

}  // namespace tessera::jinja
