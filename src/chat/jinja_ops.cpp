#include "chat/jinja_ops.h"

#include <cmath>

#include "chat/jinja_unicode.h"

namespace tessera::jinja {

// jinja2.utils.object_type_repr: how Undefined messages name an object's type.
static std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  return type_name(v) + " object";
}

static Value no_attribute(const Value& obj, const std::string& name) {
  return Value::undefined("'" + object_type_repr(obj) + "' has no attribute '" + name + "'");
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.type == Type::Namespace) {
    const Value* v = obj.dict->find(name);
    return v ? *v : no_attribute(obj, name);
  }
  // Python attributes (methods) win over dict keys for `.name`; then Jinja tries obj[name].
  Value m = get_method(obj, name);
  if (!m.is_undefined()) return m;
  if (obj.type == Type::Dict) {
    const Value* v = obj.dict->find(name);
    if (v) return *v;
  }
  return no_attribute(obj, name);
}

static int64_t index_of(const Value& key) {
  return key.type == Type::Bool ? static_cast<int64_t>(key.b) : key.i;
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (key.is_undefined()) fail_undefined(key);
  const bool int_key = key.type == Type::Int || key.type == Type::Bool;
  if (obj.type == Type::Dict) {
    const Value* v = obj.dict->find(key);
    if (v) return *v;
  } else if (obj.type == Type::Namespace && key.is_string()) {
    return get_attr(obj, key.s);
  } else if ((obj.type == Type::List || obj.type == Type::String) && int_key) {
    int64_t i = index_of(key);
    if (obj.type == Type::List) {
      int64_t n = static_cast<int64_t>(obj.list->size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return (*obj.list)[static_cast<size_t>(i)];
    } else {
      std::u32string u = utf8_decode(obj.s);
      int64_t n = static_cast<int64_t>(u.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) {
        std::string out;
        utf8_append(out, u[static_cast<size_t>(i)]);
        return Value::string(out);
      }
    }
    return Value::undefined(object_type_repr(obj) + " has no element " + py_repr(key));
  }
  if (key.is_string()) {
    Value m = get_method(obj, key.s);
    if (!m.is_undefined()) return m;
    return no_attribute(obj, key.s);
  }
  return Value::undefined(object_type_repr(obj) + " has no element " + py_repr(key));
}

// Python's slice.indices().
static void slice_indices(const Value& start, const Value& stop, const Value& step, int64_t n,
                          int64_t& b, int64_t& e, int64_t& s) {
  auto as_int = [](const Value& v, const char* what) -> int64_t {
    if (v.type == Type::Int) return v.i;
    if (v.type == Type::Bool) return v.b;
    throw RuntimeError(std::string("slice ") + what + " must be an integer or None, not " +
                       type_name(v));
  };
  s = (step.is_none() || step.is_undefined()) ? 1 : as_int(step, "step");
  if (s == 0) throw RuntimeError("slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t dflt) -> int64_t {
    if (v.is_none() || v.is_undefined()) return dflt;
    int64_t x = as_int(v, "index");
    if (x < 0) {
      x += n;
      if (x < 0) x = s < 0 ? -1 : 0;
    } else if (x >= n) {
      x = s < 0 ? n - 1 : n;
    }
    return x;
  };
  b = clamp(start, s < 0 ? n - 1 : 0);
  e = clamp(stop, s < 0 ? -1 : n);
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) fail_undefined(obj);
  int64_t b, e, s;
  if (obj.type == Type::List) {
    slice_indices(start, stop, step, static_cast<int64_t>(obj.list->size()), b, e, s);
    List out;
    for (int64_t k = b; s > 0 ? k < e : k > e; k += s)
      out.push_back((*obj.list)[static_cast<size_t>(k)]);
    return Value::make_list(std::move(out), obj.is_tuple);
  }
  if (obj.type == Type::String) {
    std::u32string u = utf8_decode(obj.s), out;
    slice_indices(start, stop, step, static_cast<int64_t>(u.size()), b, e, s);
    for (int64_t k = b; s > 0 ? k < e : k > e; k += s) out.push_back(u[static_cast<size_t>(k)]);
    return Value::string(utf8_encode(out));
  }
  // Jinja compiles slices to plain Python subscripts (no getitem fallback): other types raise.
  if (obj.type == Type::Dict) throw RuntimeError("unhashable type: 'slice'");
  throw RuntimeError("'" + type_name(obj) + "' object is not subscriptable");
}

List iterate(const Value& v) {
  switch (v.type) {
    case Type::Undefined:
      return {};
    case Type::List:
      return *v.list;
    case Type::Dict: {
      List keys;
      for (const auto& kv : v.dict->items) keys.push_back(kv.first);
      return keys;
    }
    case Type::String: {
      charge_bytes(v.s.size() * sizeof(Value));  // a Value per character
      List chars;
      for (char32_t c : utf8_decode(v.s)) {
        std::string s;
        utf8_append(s, c);
        chars.push_back(Value::string(s));
      }
      return chars;
    }
    default:
      throw RuntimeError("'" + type_name(v) + "' object is not iterable");
  }
}

bool contains(const Value& container, const Value& item) {
  switch (container.type) {
    case Type::String:
      if (!item.is_string())
        throw RuntimeError("'in <string>' requires string as left operand, not " + type_name(item));
      return container.s.find(item.s) != std::string::npos;
    case Type::List:
      for (const auto& x : *container.list)
        if (equals(x, item)) return true;
      return false;
    case Type::Dict:
      return container.dict->find(item) != nullptr;
    case Type::Undefined:
      return false;  // Python falls back to Undefined.__iter__, which is empty
    default:
      throw RuntimeError("argument of type '" + type_name(container) + "' is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.type) {
    case Type::String:
      return static_cast<int64_t>(utf8_length(v.s));
    case Type::List:
      return static_cast<int64_t>(v.list->size());
    case Type::Dict:
      return static_cast<int64_t>(v.dict->items.size());
    case Type::Undefined:
      return 0;
    default:
      throw RuntimeError("object of type '" + type_name(v) + "' has no len()");
  }
}

static bool is_int(const Value& v) {
  return v.type == Type::Int || v.type == Type::Bool;
}
static int64_t ival(const Value& v) {
  return v.type == Type::Bool ? v.b : v.i;
}
static double fval(const Value& v) {
  return v.type == Type::Float ? v.f : static_cast<double>(ival(v));
}

[[noreturn]] static void unsupported(const std::string& op, const Value& a, const Value& b) {
  throw RuntimeError("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" +
                     type_name(b) + "'");
}

static Value repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    if (n > 0 && seq.s.size() * static_cast<uint64_t>(n) > (1u << 26))
      throw RuntimeError("repeated string is too large");
    charge_bytes(seq.s.size() * static_cast<uint64_t>(n));
    std::string out;
    for (int64_t k = 0; k < n; ++k) out += seq.s;
    return Value::string(out);
  }
  if (n > 0 && seq.list->size() * static_cast<uint64_t>(n) > (1u << 24))
    throw RuntimeError("repeated list is too large");
  charge_bytes(seq.list->size() * static_cast<uint64_t>(n) * sizeof(Value));
  List out;
  for (int64_t k = 0; k < n; ++k) out.insert(out.end(), seq.list->begin(), seq.list->end());
  return Value::make_list(std::move(out), seq.is_tuple);
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value::string(py_str(a) + py_str(b));
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  const bool nums = a.is_number() && b.is_number();
  const bool ints = is_int(a) && is_int(b);
  int64_t r = 0;
  if (op == "+") {
    if (ints) {
      if (__builtin_add_overflow(ival(a), ival(b), &r)) throw RuntimeError("integer overflow");
      return Value::integer(r);
    }
    if (nums) return Value::number(fval(a) + fval(b));
    if (a.is_string() && b.is_string()) return Value::string(a.s + b.s);
    if (a.type == Type::List && b.type == Type::List && a.is_tuple == b.is_tuple) {
      List out = *a.list;
      out.insert(out.end(), b.list->begin(), b.list->end());
      return Value::make_list(std::move(out), a.is_tuple);
    }
    if (a.is_string() || a.type == Type::List)
      throw RuntimeError("can only concatenate " + type_name(a) + " (not \"" + type_name(b) +
                         "\") to " + type_name(a));
    unsupported("+", a, b);
  }
  if (op == "-") {
    if (ints) {
      if (__builtin_sub_overflow(ival(a), ival(b), &r)) throw RuntimeError("integer overflow");
      return Value::integer(r);
    }
    if (nums) return Value::number(fval(a) - fval(b));
    unsupported("-", a, b);
  }
  if (op == "*") {
    if (ints) {
      if (__builtin_mul_overflow(ival(a), ival(b), &r)) throw RuntimeError("integer overflow");
      return Value::integer(r);
    }
    if (nums) return Value::number(fval(a) * fval(b));
    if ((a.is_string() || a.type == Type::List) && is_int(b)) return repeat(a, ival(b));
    if ((b.is_string() || b.type == Type::List) && is_int(a)) return repeat(b, ival(a));
    unsupported("*", a, b);
  }
  if (op == "/") {
    if (!nums) unsupported("/", a, b);
    if (fval(b) == 0.0) throw RuntimeError("division by zero");
    return Value::number(fval(a) / fval(b));
  }
  if (op == "//" || op == "%") {
    if (!nums) {
      if (a.is_string()) throw RuntimeError("printf-style string formatting is not supported");
      unsupported(op, a, b);
    }
    if (ints) {
      int64_t x = ival(a), y = ival(b);
      if (y == 0) throw RuntimeError("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) throw RuntimeError("integer overflow");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        q -= 1;
        m += y;
      }
      return Value::integer(op == "//" ? q : m);
    }
    // ref: CPython float_divmod.
    double x = fval(a), y = fval(b);
    if (y == 0.0) throw RuntimeError("float division by zero");
    double m = std::fmod(x, y), div = (x - m) / y;
    if (m != 0.0) {
      if ((y < 0) != (m < 0)) {
        m += y;
        div -= 1.0;
      }
    } else {
      m = std::copysign(0.0, y);
    }
    if (op == "%") return Value::number(m);
    double fd;
    if (div != 0.0) {
      fd = std::floor(div);
      if (div - fd > 0.5) fd += 1.0;
    } else {
      fd = std::copysign(0.0, x / y);
    }
    return Value::number(fd);
  }
  if (op == "**") {
    if (ints && ival(b) >= 0) {
      int64_t base = ival(a), e = ival(b), acc = 1;
      while (e > 0) {
        if ((e & 1) && __builtin_mul_overflow(acc, base, &acc))
          throw RuntimeError("integer overflow");
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base))
          throw RuntimeError("integer overflow");
      }
      return Value::integer(acc);
    }
    if (nums) {
      if (fval(a) == 0.0 && fval(b) < 0)
        throw RuntimeError("0.0 cannot be raised to a negative power");
      return Value::number(std::pow(fval(a), fval(b)));
    }
    unsupported("** or pow()", a, b);
  }
  throw RuntimeError("unknown operator " + op);
}

Value negate(const Value& v, bool minus) {
  if (v.is_undefined()) fail_undefined(v);
  if (is_int(v)) {
    if (minus && ival(v) == INT64_MIN) throw RuntimeError("integer overflow");
    return Value::integer(minus ? -ival(v) : ival(v));
  }
  if (v.type == Type::Float) return Value::number(minus ? -v.f : v.f);
  throw RuntimeError(std::string("bad operand type for unary ") + (minus ? "-" : "+") + ": '" +
                     type_name(v) + "'");
}

}  // namespace tessera::jinja
