// The value model of the chat-template interpreter: Python objects as Jinja sees them (None,
// Undefined, bool, int, float, str, list/tuple, dict, Namespace, callables), with Python's
// truthiness, equality, ordering, str() and repr().
// ref: jinja2.runtime.Undefined, jinja2.utils.Namespace, CPython object semantics.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tessera::jinja {

// A run-time failure inside a template (Python would raise TypeError, UndefinedError, ...).
// The interpreter turns it into tessera::Error(invalid_argument) with the template line.
struct RuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// raise_exception(msg) in a template: reported with exactly the template's message.
struct RaisedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The bytes a render may build (issue #29): render_program() opens a budget for its thread;
// every evaluated string is charged (jinja_eval.cpp), and the ops whose output can outgrow
// their inputs many times over (repeat, join, replace, center, indent, a string's characters
// as a list) charge what they will build before they build it. Past the budget: RuntimeError.
void charge_bytes(uint64_t bytes);
class BytesBudget {
 public:
  explicit BytesBudget(uint64_t bytes);
  ~BytesBudget();
  BytesBudget(const BytesBudget&) = delete;
  BytesBudget& operator=(const BytesBudget&) = delete;

 private:
  uint64_t saved_left_, saved_total_;
};

enum class Type { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

struct Value;
struct Dict;
struct CallArgs;
using List = std::vector<Value>;
using NativeFn = std::function<Value(CallArgs&)>;

struct Callable {
  std::string name;
  NativeFn fn;
};

struct Value {
  Type type = Type::Undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                 // String; for Undefined the error to raise when it is used
  std::shared_ptr<List> list;    // List (is_tuple: a Python tuple, printed with parentheses)
  std::shared_ptr<Dict> dict;    // Dict and Namespace (insertion-ordered, like Python dicts)
  std::shared_ptr<Callable> fn;  // Callable
  bool is_tuple = false;

  static Value undefined(std::string hint) {
    Value v;
    v.s = std::move(hint);
    return v;
  }
  static Value none() {
    Value v;
    v.type = Type::None;
    return v;
  }
  static Value boolean(bool x) {
    Value v;
    v.type = Type::Bool;
    v.b = x;
    return v;
  }
  static Value integer(int64_t x) {
    Value v;
    v.type = Type::Int;
    v.i = x;
    return v;
  }
  static Value number(double x) {
    Value v;
    v.type = Type::Float;
    v.f = x;
    return v;
  }
  static Value string(std::string x) {
    Value v;
    v.type = Type::String;
    v.s = std::move(x);
    return v;
  }
  static Value make_list(List items = {}, bool tuple = false) {
    Value v;
    v.type = Type::List;
    v.list = std::make_shared<List>(std::move(items));
    v.is_tuple = tuple;
    return v;
  }
  static Value make_dict();
  static Value make_namespace();
  static Value function(std::string name, NativeFn fn) {
    Value v;
    v.type = Type::Callable;
    v.fn = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
    return v;
  }

  bool is_undefined() const { return type == Type::Undefined; }
  bool is_none() const { return type == Type::None; }
  bool is_string() const { return type == Type::String; }
  bool is_number() const { return type == Type::Int || type == Type::Float || type == Type::Bool; }
  bool is_mapping() const { return type == Type::Dict; }
};

struct Dict {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  const Value* find(const std::string& key) const;
  void set(const Value& key, Value v);
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // Python-style binding: the argument at position `index` or named `name`, else `fallback`.
  Value get(size_t index, const char* name, Value fallback = Value::none()) const;
  bool has(size_t index, const char* name) const;
  // Fails when more positional arguments than `max_pos` or an unknown keyword were given.
  void check(const char* fn, size_t max_pos, std::initializer_list<const char*> names) const;
};

// Python semantics.
bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
int compare(const Value& a, const Value& b, const char* op);  // <0, 0, >0; throws on mismatch
std::string py_str(const Value& v);                           // str(v); Undefined -> ""
std::string py_repr(const Value& v);                          // repr(v)
std::string type_name(const Value& v);             // Python's type name, for error messages
std::string float_repr(double d);                  // repr(float)
[[noreturn]] void fail_undefined(const Value& v);  // raise the Undefined's error

// JSON in and out. from_json keeps object key order when given ordered_json.
Value from_json(const nlohmann::ordered_json& j);
Value from_json(const nlohmann::json& j);
// json.dumps(v, ensure_ascii=..., indent=..., separators=..., sort_keys=...) as Python prints it.
struct DumpOptions {
  bool ensure_ascii = false;
  bool indent_set = false;  // indent=None when false
  std::string indent_unit;  // indent=4 -> "    "; indent="\t" -> "\t"
  bool separators_set = false;
  std::string item_sep, key_sep;
  bool sort_keys = false;
};
std::string json_dumps(const Value& v, const DumpOptions& o);

}  // namespace tessera::jinja
