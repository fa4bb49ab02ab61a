// Jinja tests: `x is defined`, `x is not none`, `x is string`, ... ref: jinja2/tests.py.
#include <cmath>

#include "chat/jinja_filters.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_unicode.h"

namespace tessera::jinja {

static void arity(const std::string& n, const CallArgs& a, size_t want);

static Value test_arg(const std::string& name, CallArgs& a) {
  arity(name, a, 1);
  return a.pos.empty() ? a.kw[0].second : a.pos[0];
}

// Python's arity check on a test function called with `a`: `want` extra arguments.
static void arity(const std::string& n, const CallArgs& a, size_t want) {
  size_t got = a.pos.size() + a.kw.size();
  if (got != want)
    throw RuntimeError("test_" + n + "() takes " + std::to_string(want + 1) +
                       " positional argument" + (want ? "s" : "") + " but " +
                       std::to_string(got + 1) + " were given");
}

bool apply_test(const std::string& name, const Value& v, CallArgs& a) {
  const std::string& n = name;
  static const char* unary[] = {"defined", "undefined", "none",     "boolean",  "true",
                                "false",   "integer",   "float",    "number",   "string",
                                "mapping", "iterable",  "sequence", "callable", "escaped",
                                "lower",   "upper",     "even",     "odd"};
  for (const char* u : unary)
    if (n == u) arity(n, a, 0);
  if (n == "defined") return !v.is_undefined();
  if (n == "undefined") return v.is_undefined();
  if (n == "none") return v.is_none();
  if (n == "boolean") return v.type == Type::Bool;
  if (n == "true") return v.type == Type::Bool && v.b;
  if (n == "false") return v.type == Type::Bool && !v.b;
  if (n == "integer") return v.type == Type::Int;
  if (n == "float") return v.type == Type::Float;
  if (n == "number") return v.is_number();
  if (n == "string") return v.is_string();
  if (n == "mapping") return v.type == Type::Dict;
  // Undefined is iterable (empty) in Jinja; so are str, list and dict.
  if (n == "iterable")
    return v.is_undefined() || v.is_string() || v.type == Type::List || v.type == Type::Dict;
  if (n == "sequence")
    return v.is_undefined() || v.is_string() || v.type == Type::List || v.type == Type::Dict;
  if (n == "callable") return v.type == Type::Callable;
  if (n == "escaped") return false;
  if (n == "lower" || n == "upper") {
    CallArgs none;
    return truthy(
        get_method(Value::string(py_str(v)), n == "lower" ? "islower" : "isupper").fn->fn(none));
  }
  if (n == "even" || n == "odd" || n == "divisibleby") {
    Value d = n == "divisibleby" ? test_arg(n, a) : Value::integer(2);
    Value m = binary_op("%", v, d);
    bool zero = m.type == Type::Float ? m.f == 0.0 : m.i == 0;
    return n == "odd" ? !zero : zero;
  }
  if (n == "eq" || n == "equalto" || n == "==") return equals(v, test_arg(n, a));
  if (n == "ne" || n == "!=") return !equals(v, test_arg(n, a));
  if (n == "lt" || n == "lessthan" || n == "<") return compare(v, test_arg(n, a), "<") < 0;
  if (n == "le" || n == "<=") return compare(v, test_arg(n, a), "<=") <= 0;
  if (n == "gt" || n == "greaterthan" || n == ">") return compare(v, test_arg(n, a), ">") > 0;
  if (n == "ge" || n == ">=") return compare(v, test_arg(n, a), ">=") >= 0;
  if (n == "in") return contains(test_arg(n, a), v);
  if (n == "sameas") {
    // Python identity: exact for None/True/False; for containers, the same object.
    Value o = test_arg(n, a);
    if (v.type != o.type) return false;
    switch (v.type) {
      case Type::None:
      case Type::Undefined:
        return true;
      case Type::Bool:
        return v.b == o.b;
      case Type::Int:
        return v.i == o.i;
      case Type::List:
        return v.list == o.list;
      case Type::Dict:
      case Type::Namespace:
        return v.dict == o.dict;
      case Type::Callable:
        return v.fn == o.fn;
      default:
        return false;
    }
  }
  throw RuntimeError("no test named '" + n + "'");
}

bool is_jinja_filter(const std::string& name) {
  static const char* names[] = {
      "abs",    "attr",       "batch",       "capitalize", "center",   "count",
      "d",      "default",    "dictsort",    "e",          "escape",   "filesizeformat",
      "first",  "float",      "forceescape", "format",     "groupby",  "indent",
      "int",    "items",      "join",        "last",       "length",   "list",
      "lower",  "map",        "max",         "min",        "pprint",   "random",
      "reject", "rejectattr", "replace",     "reverse",    "round",    "safe",
      "select", "selectattr", "slice",       "sort",       "string",   "striptags",
      "sum",    "title",      "tojson",      "trim",       "truncate", "unique",
      "upper",  "urlencode",  "urlize",      "wordcount",  "wordwrap", "xmlattr"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

bool is_jinja_test(const std::string& name) {
  static const char* names[] = {
      "boolean", "callable", "defined",  "divisibleby", "eq",       "equalto",     "escaped",
      "even",    "false",    "filter",   "float",       "ge",       "greaterthan", "gt",
      "in",      "integer",  "iterable", "le",          "lessthan", "lower",       "lt",
      "mapping", "ne",       "none",     "number",      "odd",      "sameas",      "sequence",
      "string",  "test",     "true",     "undefined",   "upper",    "==",          "!=",
      "<",       "<=",       ">",        ">="};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

}  // namespace tessera::jinja
