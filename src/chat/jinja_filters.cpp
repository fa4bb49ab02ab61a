#include "chat/jinja_filters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/jinja_ops.h"
#include "chat/jinja_unicode.h"

namespace tessera::jinja {
namespace {

// jinja2.filters.make_attrgetter: "a.b.0" walks items (dict keys first), digits index lists.
Value attr_path(const Value& item, const Value& attribute) {
  if (attribute.is_none()) return item;
  if (!attribute.is_string()) return get_item(item, attribute);
  Value cur = item;
  size_t i = 0;
  const std::string& a = attribute.s;
  while (true) {
    size_t j = a.find('.', i);
    std::string part = a.substr(i, j == std::string::npos ? std::string::npos : j - i);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    cur = get_item(cur, digits ? Value::integer(std::strtoll(part.c_str(), nullptr, 10))
                               : Value::string(part));
    if (j == std::string::npos) return cur;
    i = j + 1;
  }
}

Value ignore_case(const Value& v, bool case_sensitive) {
  return (!case_sensitive && v.is_string()) ? Value::string(py_lower(v.s)) : v;
}

// Python int(str): optional sign, digits with single underscores, surrounding whitespace.
bool parse_py_int(const std::string& text, int base, int64_t& out) {
  std::string s = py_strip(text, true, true);
  if (s.empty()) return false;
  size_t k = 0;
  bool neg = false;
  if (s[0] == '+' || s[0] == '-') neg = s[k++] == '-';
  if (base == 0 || base == 16 || base == 8 || base == 2) {
    if (k + 1 < s.size() && s[k] == '0' && std::strchr("xXoObB", s[k + 1])) {
      char b = static_cast<char>(std::tolower(s[k + 1]));
      int want = b == 'x' ? 16 : b == 'o' ? 8 : 2;
      if (base != 0 && base != want) return false;
      base = want;
      k += 2;
      if (k < s.size() && s[k] == '_') ++k;
    } else if (base == 0) {
      base = 10;
    }
  }
  std::string digits;
  for (size_t p = k; p < s.size(); ++p) {
    if (s[p] == '_' && p > k && p + 1 < s.size() && s[p - 1] != '_') continue;
    digits += s[p];
  }
  if (digits.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(digits.c_str(), &end, base);
  if (*end != '\0' || errno == ERANGE || digits[0] == '-' || digits[0] == '+') return false;
  out = neg ? -v : v;
  return true;
}

bool parse_py_float(const Value& v, double& out) {
  switch (v.type) {
    case Type::Int:
      out = static_cast<double>(v.i);
      return true;
    case Type::Bool:
      out = v.b;
      return true;
    case Type::Float:
      out = v.f;
      return true;
    case Type::String: {
      std::string s = py_strip(v.s, true, true), t;
      for (char c : s)
        if (c != '_') t += c;
      if (t.empty()) return false;
      char* end = nullptr;
      out = std::strtod(t.c_str(), &end);
      return *end == '\0';
    }
    case Type::Undefined:
      fail_undefined(v);
    default:
      return false;
  }
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Python's round(x, ndigits) for floats (correctly rounded, ties to even on exact ties).
double py_round(double x, int64_t nd) {
  if (!std::isfinite(x)) return x;
  if (nd > 300) return x;
  if (nd < -300) return 0.0 * x;
  if (nd >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(nd), x);
    return std::strtod(buf, nullptr);
  }
  double p = std::pow(10.0, static_cast<double>(-nd));
  return std::nearbyint(x / p) * p;
}

Value filter_select(const Value& v, CallArgs& a, bool select, bool by_attr) {
  List out;
  size_t first_test_arg = by_attr ? 2 : 1;
  Value attribute = by_attr ? a.get(0, "attribute") : Value::none();
  Value test = a.pos.size() > first_test_arg - 1 ? a.get(first_test_arg - 1, "") : Value::none();
  CallArgs targs;
  for (size_t k = first_test_arg; k < a.pos.size(); ++k) targs.pos.push_back(a.pos[k]);
  for (const auto& x : iterate(v)) {
    Value item = by_attr ? attr_path(x, attribute) : x;
    bool ok;
    if (test.is_none()) {
      ok = truthy(item);
    } else {
      if (!test.is_string()) throw RuntimeError("test name must be a string");
      CallArgs ta = targs;
      ok = apply_test(test.s, item, ta);
    }
    if (ok == select) out.push_back(x);
  }
  return Value::make_list(std::move(out));
}

List sorted_items(const Value& v, bool reverse, bool case_sensitive, const Value& attribute) {
  List items = iterate(v);
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    Value kx = ignore_case(attr_path(x, attribute), case_sensitive);
    Value ky = ignore_case(attr_path(y, attribute), case_sensitive);
    return reverse ? compare(ky, kx, "<") < 0 : compare(kx, ky, "<") < 0;
  });
  return items;
}

}  // namespace

Value apply_filter(const std::string& name, const Value& v, CallArgs& a) {
  const std::string& n = name;
  if (n == "safe" || n == "forceescape" || n == "e" || n == "escape") {
    if (n == "safe") return v;
    return Value::string(html_escape(py_str(v)));
  }
  if (n == "default" || n == "d") {
    a.check("default", 2, {"default_value", "boolean"});
    bool boolean = truthy(a.get(1, "boolean", Value::boolean(false)));
    if (v.is_undefined() || (boolean && !truthy(v)))
      return a.get(0, "default_value", Value::string(""));
    return v;
  }
  if (n == "trim") {
    a.check("trim", 1, {"chars"});
    Value chars = a.get(0, "chars");
    if (chars.is_none()) return Value::string(py_strip(py_str(v), true, true));
    return Value::string(py_strip_chars(py_str(v), py_str(chars), true, true));
  }
  if (n == "length" || n == "count") return Value::integer(length(v));
  if (n == "lower") return Value::string(py_lower(py_str(v)));
  if (n == "upper") return Value::string(py_upper(py_str(v)));
  if (n == "string") return Value::string(py_str(v));
  if (n == "capitalize" || n == "title") {
    CallArgs none;
    if (n == "capitalize") return get_method(Value::string(py_str(v)), "capitalize").fn->fn(none);
    // jinja2 do_title: split on runs of [-\s({[<], upper-case each chunk's first character.
    std::u32string u = utf8_decode(py_str(v));
    bool start = true;
    for (auto& c : u) {
      bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c);
      if (sep) {
        start = true;
        continue;
      }
      c = start ? py_upper(c) : py_lower(c);
      start = false;
    }
    return Value::string(utf8_encode(u));
  }
  if (n == "replace") {
    a.check("replace", 3, {"old", "new", "count"});
    CallArgs ra;
    ra.pos = {Value::string(py_str(a.get(0, "old"))), Value::string(py_str(a.get(1, "new")))};
    Value count = a.get(2, "count");
    if (!count.is_none()) ra.pos.push_back(count);
    return get_method(Value::string(py_str(v)), "replace").fn->fn(ra);
  }
  if (n == "first" || n == "last") {
    List items = iterate(v);
    if (items.empty())
      return Value::undefined(std::string("No ") + n + " item, sequence was empty.");
    return n == "first" ? items.front() : items.back();
  }
  if (n == "list") return Value::make_list(iterate(v));
  if (n == "reverse") {
    if (v.is_string()) {
      std::u32string u = utf8_decode(v.s);
      std::reverse(u.begin(), u.end());
      return Value::string(utf8_encode(u));
    }
    List items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::make_list(std::move(items));
  }
  if (n == "join") {
    a.check("join", 2, {"d", "attribute"});
    std::string sep = py_str(a.get(0, "d", Value::string(""))), out;
    Value attribute = a.get(1, "attribute");
    bool first = true;
    for (const auto& x : iterate(v)) {
      const std::string part = py_str(attr_path(x, attribute));
      charge_bytes((first ? 0 : sep.size()) + part.size());
      if (!first) out += sep;
      first = false;
      out += part;
    }
    return Value::string(out);
  }
  if (n == "items") {
    if (v.is_undefined()) return Value::make_list();
    if (v.type != Type::Dict) throw RuntimeError("Can only get item pairs from a mapping.");
    CallArgs none;
    return get_method(v, "items").fn->fn(none);
  }
  if (n == "dictsort") {
    a.check("dictsort", 3, {"case_sensitive", "by", "reverse"});
    if (v.type != Type::Dict)
      throw RuntimeError("You can only sort by either \"key\" or \"value\"");
    bool cs = truthy(a.get(0, "case_sensitive", Value::boolean(false)));
    std::string by = py_str(a.get(1, "by", Value::string("key")));
    if (by != "key" && by != "value")
      throw RuntimeError("You can only sort by either \"key\" or \"value\"");
    CallArgs none;
    List items = *get_method(v, "items").fn->fn(none).list;
    Value pos = Value::integer(by == "key" ? 0 : 1);
    return Value::make_list(sorted_items(
        Value::make_list(items), truthy(a.get(2, "reverse", Value::boolean(false))), cs, pos));
  }
  if (n == "sort") {
    a.check("sort", 3, {"reverse", "case_sensitive", "attribute"});
    return Value::make_list(sorted_items(v, truthy(a.get(0, "reverse", Value::boolean(false))),
                                         truthy(a.get(1, "case_sensitive", Value::boolean(false))),
                                         a.get(2, "attribute")));
  }
  if (n == "unique") {
    a.check("unique", 2, {"case_sensitive", "attribute"});
    bool cs = truthy(a.get(0, "case_sensitive", Value::boolean(false)));
    Value attribute = a.get(1, "attribute");
    List out, seen;
    for (const auto& x : iterate(v)) {
      Value key = ignore_case(attr_path(x, attribute), cs);
      bool dup = false;
      for (const auto& s : seen) dup = dup || equals(s, key);
      if (!dup) {
        seen.push_back(key);
        out.push_back(x);
      }
    }
    return Value::make_list(std::move(out));
  }
  if (n == "min" || n == "max") {
    a.check(n.c_str(), 2, {"case_sensitive", "attribute"});
    List items = sorted_items(v, false, truthy(a.get(0, "case_sensitive", Value::boolean(false))),
                              a.get(1, "attribute"));
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    return n == "min" ? items.front() : items.back();
  }
  if (n == "sum") {
    a.check("sum", 2, {"attribute", "start"});
    Value acc = a.get(1, "start", Value::integer(0));
    for (const auto& x : iterate(v)) acc = binary_op("+", acc, attr_path(x, a.get(0, "attribute")));
    return acc;
  }
  if (n == "map") {
    List out;
    if (a.pos.empty() || a.has(99, "attribute")) {
      Value attribute = a.get(99, "attribute");
      Value dflt = a.get(99, "default", Value::undefined(""));
      for (const auto& x : iterate(v)) {
        Value y = attr_path(x, attribute);
        out.push_back(y.is_undefined() && !dflt.is_undefined() ? dflt : y);
      }
      return Value::make_list(std::move(out));
    }
    if (!a.pos[0].is_string()) throw RuntimeError("map: filter name must be a string");
    std::string f = a.pos[0].s;
    for (const auto& x : iterate(v)) {
      CallArgs fa;
      fa.pos.assign(a.pos.begin() + 1, a.pos.end());
      fa.kw = a.kw;
      out.push_back(apply_filter(f, x, fa));
    }
    return Value::make_list(std::move(out));
  }
  if (n == "select" || n == "reject") return filter_select(v, a, n == "select", false);
  if (n == "selectattr" || n == "rejectattr") return filter_select(v, a, n == "selectattr", true);
  if (n == "attr") {
    Value name_v = a.get(0, "name");
    if (!name_v.is_string()) throw RuntimeError("attr: the attribute name must be a string");
    if (v.is_undefined()) fail_undefined(v);
    if (v.type == Type::Namespace) return get_attr(v, name_v.s);
    Value m = get_method(v, name_v.s);
    return m.is_undefined() ? Value::undefined("'" + type_name(v) + " object' has no attribute '" +
                                               name_v.s + "'")
                            : m;
  }
  if (n == "int") {
    a.check("int", 2, {"default", "base"});
    Value dflt = a.get(0, "default", Value::integer(0));
    int64_t base = a.get(1, "base", Value::integer(10)).i;
    if (v.is_undefined()) fail_undefined(v);
    int64_t out;
    if (v.type == Type::Int) return v;
    if (v.type == Type::Bool) return Value::integer(v.b);
    if (v.type == Type::Float && std::isfinite(v.f) && std::fabs(v.f) < 9.2e18)
      return Value::integer(static_cast<int64_t>(v.f));
    if (v.is_string() && parse_py_int(v.s, static_cast<int>(base), out)) return Value::integer(out);
    double d;
    if (v.is_string() && parse_py_float(v, d) && std::isfinite(d) && std::fabs(d) < 9.2e18)
      return Value::integer(static_cast<int64_t>(d));
    return dflt;
  }
  if (n == "float") {
    a.check("float", 1, {"default"});
    double d;
    if (parse_py_float(v, d)) return Value::number(d);
    return a.get(0, "default", Value::number(0.0));
  }
  if (n == "abs") {
    if (v.type == Type::Float) return Value::number(std::fabs(v.f));
    if (v.type == Type::Int || v.type == Type::Bool)
      return negate(v, (v.type == Type::Int ? v.i : v.b) < 0);
    throw RuntimeError("bad operand type for abs(): '" + type_name(v) + "'");
  }
  if (n == "round") {
    a.check("round", 2, {"precision", "method"});
    int64_t prec = a.get(0, "precision", Value::integer(0)).i;
    std::string method = py_str(a.get(1, "method", Value::string("common")));
    double x;
    if (!parse_py_float(v, x) || v.is_string()) throw RuntimeError("round: value must be a number");
    if (method == "common") return Value::number(py_round(x, prec));
    double p = std::pow(10.0, static_cast<double>(prec));
    if (method == "ceil") return Value::number(std::ceil(x * p) / p);
    if (method == "floor") return Value::number(std::floor(x * p) / p);
    throw RuntimeError("method must be common, ceil or floor");
  }
  if (n == "indent") {
    a.check("indent", 3, {"width", "first", "blank"});
    Value w = a.get(0, "width", Value::integer(4));
    const uint64_t width =
        w.is_string() ? w.s.size() : static_cast<uint64_t>(std::max<int64_t>(0, w.i));
    const std::string text = py_str(v);
    // Every line gets the indent: charged before the lines are built.
    charge_bytes(width * (1 + static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n'))));
    std::string ind = w.is_string() ? w.s : std::string(static_cast<size_t>(width), ' ');
    CallArgs none;
    List lines = *get_method(Value::string(text + "\n"), "splitlines").fn->fn(none).list;
    std::string rv;
    if (truthy(a.get(2, "blank", Value::boolean(false)))) {
      for (size_t k = 0; k < lines.size(); ++k) rv += (k ? "\n" + ind : "") + lines[k].s;
    } else {
      rv = lines.empty() ? "" : lines[0].s;
      for (size_t k = 1; k < lines.size(); ++k)
        rv += "\n" + (lines[k].s.empty() ? "" : ind + lines[k].s);
    }
    if (truthy(a.get(1, "first", Value::boolean(false)))) rv = ind + rv;
    return Value::string(rv);
  }
  if (n == "center") {
    int64_t width = a.get(0, "width", Value::integer(80)).i;
    std::string s = py_str(v);
    int64_t len = static_cast<int64_t>(utf8_length(s));
    if (width <= len) return Value::string(s);
    int64_t pad = width - len, left = pad / 2 + (pad & width & 1);
    charge_bytes(static_cast<uint64_t>(pad));
    return Value::string(std::string(static_cast<size_t>(left), ' ') + s +
                         std::string(static_cast<size_t>(pad - left), ' '));
  }
  if (n == "batch") {
    int64_t size = a.get(0, "linecount", Value::integer(1)).i;
    if (size <= 0) throw RuntimeError("batch: linecount must be positive");
    Value fill = a.get(1, "fill_with");
    List out, cur;
    for (const auto& x : iterate(v)) {
      cur.push_back(x);
      if (static_cast<int64_t>(cur.size()) == size) {
        out.push_back(Value::make_list(std::move(cur)));
        cur.clear();
      }
    }
    if (!cur.empty()) {
      if (!fill.is_none())
        while (static_cast<int64_t>(cur.size()) < size) cur.push_back(fill);
      out.push_back(Value::make_list(std::move(cur)));
    }
    return Value::make_list(std::move(out));
  }
  if (n == "wordcount") {
    int64_t words = 0;
    bool in_word = false;
    for (char32_t c : utf8_decode(py_str(v))) {
      bool w = py_isalnum(c) || c == '_';
      if (w && !in_word) ++words;
      in_word = w;
    }
    return Value::integer(words);
  }
  if (n == "tojson") {
    // transformers: json.dumps(x, ensure_ascii=False, indent=None, separators=None,
    // sort_keys=False)
    a.check("tojson", 4, {"ensure_ascii", "indent", "separators", "sort_keys"});
    DumpOptions o;
    o.ensure_ascii = truthy(a.get(0, "ensure_ascii", Value::boolean(false)));
    Value indent = a.get(1, "indent");
    if (!indent.is_none()) {
      o.indent_set = true;
      if (indent.is_string())
        o.indent_unit = indent.s;
      else if (indent.type == Type::Int)
        o.indent_unit = std::string(static_cast<size_t>(std::max<int64_t>(0, indent.i)), ' ');
      else
        throw RuntimeError("tojson: indent must be an integer or a string");
    }
    Value seps = a.get(2, "separators");
    if (!seps.is_none()) {
      if (seps.type != Type::List || seps.list->size() != 2 || !(*seps.list)[0].is_string() ||
          !(*seps.list)[1].is_string())
        throw RuntimeError("tojson: separators must be a pair of strings");
      o.separators_set = true;
      o.item_sep = (*seps.list)[0].s;
      o.key_sep = (*seps.list)[1].s;
    }
    o.sort_keys = truthy(a.get(3, "sort_keys", Value::boolean(false)));
    return Value::string(json_dumps(v, o));
  }
  throw RuntimeError("no filter named '" + n + "'");
}

}  // namespace tessera::jinja
