// Python object semantics for template values. ref: CPython's object.c/unicodeobject.c
// (str/repr), floatobject.c (float repr), jinja2.runtime.Undefined.
#include "chat/jinja_value.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat/jinja_unicode.h"

namespace tessera::jinja {

namespace {
// No budget outside a render: the values built while converting a context, for example.
thread_local uint64_t t_left = UINT64_MAX, t_total = UINT64_MAX;
}  // namespace

void charge_bytes(uint64_t bytes) {
  if (bytes > t_left)
    throw RuntimeError("the template built more than " + std::to_string(t_total) +
                       " bytes of strings (a string doubled in a loop?)");
  t_left -= bytes;
}

BytesBudget::BytesBudget(uint64_t bytes) : saved_left_(t_left), saved_total_(t_total) {
  t_left = t_total = bytes;
}
BytesBudget::~BytesBudget() {
  t_left = saved_left_;
  t_total = saved_total_;
}

Value Value::make_dict() {
  Value v;
  v.type = Type::Dict;
  v.dict = std::make_shared<Dict>();
  return v;
}
Value Value::make_namespace() {
  Value v;
  v.type = Type::Namespace;
  v.dict = std::make_shared<Dict>();
  return v;
}

const Value* Dict::find(const Value& key) const {
  for (const auto& kv : items)
    if (equals(kv.first, key)) return &kv.second;
  return nullptr;
}
const Value* Dict::find(const std::string& key) const {
  for (const auto& kv : items)
    if (kv.first.type == Type::String && kv.first.s == key) return &kv.second;
  return nullptr;
}
void Dict::set(const Value& key, Value v) {
  for (auto& kv : items)
    if (equals(kv.first, key)) {
      kv.second = std::move(v);
      return;
    }
  items.emplace_back(key, std::move(v));
}

Value CallArgs::get(size_t index, const char* name, Value fallback) const {
  if (index < pos.size()) return pos[index];
  for (const auto& [k, v] : kw)
    if (k == name) return v;
  return fallback;
}
bool CallArgs::has(size_t index, const char* name) const {
  if (index < pos.size()) return true;
  for (const auto& kv : kw)
    if (kv.first == name) return true;
  return false;
}
void CallArgs::check(const char* fn, size_t max_pos,
                     std::initializer_list<const char*> names) const {
  if (pos.size() > max_pos)
    throw RuntimeError(std::string(fn) + "() takes at most " + std::to_string(max_pos) +
                       " positional arguments (" + std::to_string(pos.size()) + " given)");
  for (const auto& kv : kw) {
    bool known = false;
    for (const char* n : names) known = known || kv.first == n;
    if (!known)
      throw RuntimeError(std::string(fn) + "() got an unexpected keyword argument '" + kv.first +
                         "'");
  }
}

void fail_undefined(const Value& v) {
  throw RuntimeError(v.s.empty() ? std::string("value is undefined") : v.s);
}

bool truthy(const Value& v) {
  switch (v.type) {
    case Type::Undefined:
    case Type::None:
      return false;
    case Type::Bool:
      return v.b;
    case Type::Int:
      return v.i != 0;
    case Type::Float:
      return v.f != 0.0;
    case Type::String:
      return !v.s.empty();
    case Type::List:
      return !v.list->empty();
    case Type::Dict:
      return !v.dict->items.empty();
    default:
      return true;
  }
}

static double as_double(const Value& v) {
  return v.type == Type::Float ? v.f : v.type == Type::Int ? static_cast<double>(v.i) : v.b;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.type != Type::Float && b.type != Type::Float) {
      int64_t x = a.type == Type::Int ? a.i : a.b, y = b.type == Type::Int ? b.i : b.b;
      return x == y;
    }
    return as_double(a) == as_double(b);
  }
  if (a.type != b.type) return false;
  switch (a.type) {
    case Type::Undefined:
    case Type::None:
      return true;
    case Type::String:
      return a.s == b.s;
    case Type::List:
      if (a.is_tuple != b.is_tuple || a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!equals((*a.list)[k], (*b.list)[k])) return false;
      return true;
    case Type::Dict:
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* o = b.dict->find(k);
        if (!o || !equals(v, *o)) return false;
      }
      return true;
    case Type::Namespace:
      return a.dict == b.dict;
    case Type::Callable:
      return a.fn == b.fn;
    default:
      return false;
  }
}

int compare(const Value& a, const Value& b, const char* op) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.type != Type::Float && b.type != Type::Float) {
      int64_t x = a.type == Type::Int ? a.i : a.b, y = b.type == Type::Int ? b.i : b.b;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    double x = as_double(a), y = as_double(b);
    return x < y ? -1 : x > y ? 1 : 0;  // NaN compares equal here; Python says False to all
  }
  if (a.type == Type::String && b.type == Type::String) {
    int c = a.s.compare(b.s);  // UTF-8 byte order is code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.type == Type::List && b.type == Type::List && a.is_tuple == b.is_tuple) {
    size_t n = std::min(a.list->size(), b.list->size());
    for (size_t k = 0; k < n; ++k) {
      if (equals((*a.list)[k], (*b.list)[k])) continue;
      return compare((*a.list)[k], (*b.list)[k], op);
    }
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
  }
  throw RuntimeError(std::string("'") + op + "' not supported between instances of '" +
                     type_name(a) + "' and '" + type_name(b) + "'");
}

std::string type_name(const Value& v) {
  switch (v.type) {
    case Type::Undefined:
      return "Undefined";
    case Type::None:
      return "NoneType";
    case Type::Bool:
      return "bool";
    case Type::Int:
      return "int";
    case Type::Float:
      return "float";
    case Type::String:
      return "str";
    case Type::List:
      return v.is_tuple ? "tuple" : "list";
    case Type::Dict:
      return "dict";
    case Type::Namespace:
      return "Namespace";
    case Type::Callable:
      return "function";
  }
  return "object";
}

// repr(float): the shortest digits that round-trip, in fixed notation when the decimal
// exponent is in [-4, 16), else d.ddde+XX. ref: CPython float_repr / PyOS_double_to_string 'r'.
std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  int exp = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (char c : mant)
    if (c != '.') digits.push_back(c);
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char eb[16];
  std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + eb;
}

static bool printable(char32_t c) {
  if (c == ' ') return true;
  if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return false;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

static std::string str_repr(const std::string& s) {
  bool has_sq = s.find('\'') != std::string::npos, has_dq = s.find('"') != std::string::npos;
  char q = (has_sq && !has_dq) ? '"' : '\'';
  std::string out(1, q);
  char hex[16];
  for (char32_t c : utf8_decode(s)) {
    if (c == static_cast<char32_t>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(c));
      out += hex;
    } else if (c < 0x7F || printable(c)) {
      utf8_append(out, c);
    } else {
      if (c <= 0xFF)
        std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(c));
      else if (c <= 0xFFFF)
        std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned>(c));
      else
        std::snprintf(hex, sizeof hex, "\\U%08x", static_cast<unsigned>(c));
      out += hex;
    }
  }
  out += q;
  return out;
}

std::string py_repr(const Value& v) {
  switch (v.type) {
    case Type::Undefined:
      return "Undefined";
    case Type::String:
      return str_repr(v.s);
    case Type::List: {
      std::string out = v.is_tuple ? "(" : "[";
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += ", ";
        out += py_repr((*v.list)[k]);
      }
      if (v.is_tuple && v.list->size() == 1) out += ",";
      return out + (v.is_tuple ? ")" : "]");
    }
    case Type::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.dict->items) {
        if (!first) out += ", ";
        first = false;
        out += py_repr(k) + ": " + py_repr(x);
      }
      return out + "}";
    }
    case Type::Namespace: {
      Value d = Value::make_dict();
      d.dict = v.dict;
      d.type = Type::Dict;
      return "<Namespace " + py_repr(d) + ">";
    }
    default:
      return py_str(v);
  }
}

std::string py_str(const Value& v) {
  switch (v.type) {
    case Type::Undefined:
      return "";
    case Type::None:
      return "None";
    case Type::Bool:
      return v.b ? "True" : "False";
    case Type::Int:
      return std::to_string(v.i);
    case Type::Float:
      return float_repr(v.f);
    case Type::String:
      return v.s;
    case Type::Callable:
      return "<function " + v.fn->name + ">";
    default:
      return py_repr(v);
  }
}

template <class J>
static Value from_json_impl(const J& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value::string(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(from_json_impl(x));
      return Value::make_list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Value d = Value::make_dict();
      for (auto it = j.begin(); it != j.end(); ++it)
        d.dict->items.emplace_back(Value::string(it.key()), from_json_impl(it.value()));
      return d;
    }
    default:
      return Value::none();  // binary and discarded values do not occur in parsed JSON
  }
}
Value from_json(const nlohmann::ordered_json& j) {
  return from_json_impl(j);
}
Value from_json(const nlohmann::json& j) {
  return from_json_impl(j);
}

// ref: CPython Lib/json/encoder.py (py_encode_basestring / _ascii, _make_iterencode).
static void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  char hex[16];
  for (char32_t c : utf8_decode(s)) {
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c > 0x7E)) {
      if (c > 0xFFFF) {
        char32_t v = c - 0x10000;
        std::snprintf(hex, sizeof hex, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned>(c));
      }
      out += hex;
    } else {
      utf8_append(out, c);
    }
  }
  out += '"';
}

static std::string json_key(const Value& k) {
  switch (k.type) {
    case Type::String:
      return k.s;
    case Type::Int:
      return std::to_string(k.i);
    case Type::Float:
      return float_repr(k.f);
    case Type::Bool:
      return k.b ? "true" : "false";
    case Type::None:
      return "null";
    default:
      throw RuntimeError("keys must be str, int, float, bool or None, not " + type_name(k));
  }
}

static void dump(std::string& out, const Value& v, const DumpOptions& o, int level) {
  if (level > 512) throw RuntimeError("tojson: value nested too deeply");
  const std::string item_sep = o.separators_set ? o.item_sep : (o.indent_set ? "," : ", ");
  const std::string key_sep = o.separators_set ? o.key_sep : ": ";
  auto newline = [&](int lv) {
    if (!o.indent_set) return;
    out += '\n';
    for (int k = 0; k < lv; ++k) out += o.indent_unit;
  };
  switch (v.type) {
    case Type::None:
      out += "null";
      return;
    case Type::Bool:
      out += v.b ? "true" : "false";
      return;
    case Type::Int:
      out += std::to_string(v.i);
      return;
    case Type::Float:
      if (std::isnan(v.f))
        out += "NaN";
      else if (std::isinf(v.f))
        out += v.f < 0 ? "-Infinity" : "Infinity";
      else
        out += float_repr(v.f);
      return;
    case Type::String:
      json_string(out, v.s, o.ensure_ascii);
      return;
    case Type::List: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      newline(level + 1);
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) {
          out += item_sep;
          newline(level + 1);
        }
        dump(out, (*v.list)[k], o, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Type::Dict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<std::pair<std::string, const Value*>> items;
      for (const auto& [k, x] : v.dict->items) items.emplace_back(json_key(k), &x);
      if (o.sort_keys)
        std::stable_sort(items.begin(), items.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      out += '{';
      newline(level + 1);
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) {
          out += item_sep;
          newline(level + 1);
        }
        json_string(out, items[k].first, o.ensure_ascii);
        out += key_sep;
        dump(out, *items[k].second, o, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default:
      throw RuntimeError("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

std::string json_dumps(const Value& v, const DumpOptions& o) {
  std::string out;
  dump(out, v, o, 0);
  return out;
}

}  // namespace tessera::jinja
