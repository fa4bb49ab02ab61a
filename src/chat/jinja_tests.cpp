// Jinja tests: `x is defined`, `x is not none`, `x is string`, ... ref: jinja2/tests.py.
#include <cmath>

#include "chat/jinja_filters.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_unicode.h"

namespace tessera::jinja {

static Value test_arg(const std::string& name, CallArgs& a) {
  if (a.pos.empty() && a.kw.empty())
    throw RuntimeError("test '" + name + "' needs an argument");
  return a.pos.empty() ? a.kw[0].second : a.pos[0];
}

bool apply_test(const std::string& name, const Value& v, CallArgs& a) {
  const std::string& n = name;
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
    return truthy(get_method(Value::string(py_str(v)), n == "lower" ? "islower" : "isupper").fn->fn(none));
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
      case Type::None: case Type::Undefined: return true;
      case Type::Bool: return v.b == o.b;
      case Type::Int: return v.i == o.i;
      case Type::List: return v.list == o.list;
      case Type::Dict: case Type::Namespace: return v.dict == o.dict;
      case Type::Callable: return v.fn == o.fn;
      default: return false;
    }
  }
  throw RuntimeError("no test named '" + n + "'");
}

}  // namespace tessera::jinja
