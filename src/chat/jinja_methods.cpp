// Methods of str, dict and list values that templates call (message.content.strip(),
// messages[0].get('role'), ...). The sandbox transformers uses forbids mutating methods
// (list.append, dict.update), so only read-only ones exist here. ref: CPython str/dict/list.
#include <algorithm>

#include "chat/jinja_ops.h"
#include "chat/jinja_unicode.h"

namespace tessera::jinja {
namespace {

std::string str_arg(const Value& v, const char* fn) {
  if (!v.is_string())
    throw RuntimeError(std::string(fn) + "() argument must be str, not " + type_name(v));
  return v.s;
}

int64_t int_arg(const Value& v, const char* fn) {
  if (v.type == Type::Int) return v.i;
  if (v.type == Type::Bool) return v.b;
  throw RuntimeError(std::string("'") + type_name(v) +
                     "' object cannot be interpreted as an "
                     "integer (in " +
                     fn + "())");
}

List split_ws(const std::u32string& u, int64_t maxsplit) {
  List out;
  size_t i = 0, n = u.size();
  while (true) {
    while (i < n && py_isspace(u[i])) ++i;
    if (i >= n) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      size_t e = n;
      while (e > i && py_isspace(u[e - 1])) --e;
      out.push_back(Value::string(utf8_encode(u.substr(i, e - i))));
      break;
    }
    size_t j = i;
    while (j < n && !py_isspace(u[j])) ++j;
    out.push_back(Value::string(utf8_encode(u.substr(i, j - i))));
    i = j;
  }
  return out;
}

List split_sep(const std::string& s, const std::string& sep, int64_t maxsplit) {
  if (sep.empty()) throw RuntimeError("empty separator");
  List out;
  size_t i = 0;
  while (true) {
    size_t j = s.find(sep, i);
    if (j == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit)) {
      out.push_back(Value::string(s.substr(i)));
      return out;
    }
    out.push_back(Value::string(s.substr(i, j - i)));
    i = j + sep.size();
  }
}

List rsplit_sep(const std::string& s, const std::string& sep, int64_t maxsplit) {
  if (maxsplit < 0) return split_sep(s, sep, -1);
  if (sep.empty()) throw RuntimeError("empty separator");
  List out;
  size_t end = s.size();
  while (static_cast<int64_t>(out.size()) < maxsplit) {
    size_t j = end >= sep.size() ? s.rfind(sep, end - sep.size()) : std::string::npos;
    if (j == std::string::npos) break;
    out.insert(out.begin(), Value::string(s.substr(j + sep.size(), end - j - sep.size())));
    end = j;
  }
  out.insert(out.begin(), Value::string(s.substr(0, end)));
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to,
                        int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` around every code point
    std::u32string u = utf8_decode(s);
    int64_t done = 0;
    for (size_t k = 0; k <= u.size(); ++k) {
      if (count < 0 || done < count) {
        charge_bytes(to.size());
        out += to;
        ++done;
      }
      if (k < u.size()) utf8_append(out, u[k]);
    }
    return out;
  }
  size_t i = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t j = s.find(from, i);
    if (j == std::string::npos) break;
    charge_bytes(j - i + to.size());
    out += s.substr(i, j - i) + to;
    i = j + from.size();
    ++done;
  }
  return out + s.substr(i);
}

bool cased(char32_t c) {
  return py_isupper(c) || py_islower(c);
}

std::string py_title_str(const std::string& s) {
  std::u32string u = utf8_decode(s);
  bool prev_cased = false;
  for (auto& c : u) {
    bool was = cased(c);
    c = prev_cased ? py_lower(c) : py_title(c);
    prev_cased = was;
  }
  return utf8_encode(u);
}

std::string py_capitalize(const std::string& s) {
  std::u32string u = utf8_decode(s);
  for (size_t k = 0; k < u.size(); ++k) u[k] = k == 0 ? py_title(u[k]) : py_lower(u[k]);
  return utf8_encode(u);
}

// Python's affix tests accept a str or a tuple of str, with optional start/end.
bool affix(const std::string& s, const Value& arg, bool prefix, const CallArgs& a) {
  std::u32string u = utf8_decode(s);
  int64_t n = static_cast<int64_t>(u.size());
  auto pos = [&](const Value& v, int64_t dflt) {
    if (v.is_none()) return dflt;
    int64_t x = int_arg(v, prefix ? "startswith" : "endswith");
    if (x < 0) x = std::max<int64_t>(0, x + n);
    return std::min(x, n);
  };
  int64_t b = pos(a.get(1, "start"), 0), e = pos(a.get(2, "end"), n);
  std::string sub =
      b <= e ? utf8_encode(u.substr(static_cast<size_t>(b), static_cast<size_t>(e - b))) : "";
  auto one = [&](const Value& x) {
    std::string t = str_arg(x, prefix ? "startswith" : "endswith");
    if (b > e) return false;
    if (t.size() > sub.size()) return false;
    return prefix ? sub.compare(0, t.size(), t) == 0
                  : sub.compare(sub.size() - t.size(), t.size(), t) == 0;
  };
  if (arg.type == Type::List && arg.is_tuple) {
    for (const auto& x : *arg.list)
      if (one(x)) return true;
    return false;
  }
  return one(arg);
}

// str.format with "{}", "{0}", "{name}", "{{", "}}" and the !s / !r conversions.
std::string py_format(const std::string& fmt, const CallArgs& a) {
  std::string out;
  size_t auto_idx = 0;
  for (size_t k = 0; k < fmt.size(); ++k) {
    char c = fmt[k];
    if (c == '}') {
      if (k + 1 < fmt.size() && fmt[k + 1] == '}') {
        out += '}';
        ++k;
        continue;
      }
      throw RuntimeError("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (k + 1 < fmt.size() && fmt[k + 1] == '{') {
      out += '{';
      ++k;
      continue;
    }
    size_t close = fmt.find('}', k);
    if (close == std::string::npos) throw RuntimeError("Single '{' encountered in format string");
    std::string field = fmt.substr(k + 1, close - k - 1);
    k = close;
    char conv = 0;
    size_t bang = field.find('!');
    if (bang != std::string::npos) {
      conv = bang + 1 < field.size() ? field[bang + 1] : 0;
      field = field.substr(0, bang);
    }
    if (field.find(':') != std::string::npos)
      throw RuntimeError("format specifications are not supported in str.format");
    Value v;
    if (field.empty()) {
      if (auto_idx >= a.pos.size()) throw RuntimeError("Replacement index out of range");
      v = a.pos[auto_idx++];
    } else if (std::all_of(field.begin(), field.end(),
                           [](char d) { return d >= '0' && d <= '9'; })) {
      size_t idx = std::stoul(field);
      if (idx >= a.pos.size()) throw RuntimeError("Replacement index out of range");
      v = a.pos[idx];
    } else {
      bool found = false;
      for (const auto& [name, x] : a.kw)
        if (name == field) v = x, found = true;
      if (!found) throw RuntimeError("KeyError: '" + field + "'");
    }
    out += conv == 'r' ? py_repr(v) : py_str(v);
  }
  return out;
}

Value str_method(const std::string& s, const std::string& name, CallArgs& a) {
  auto chars_or_ws = [&](bool left, bool right) {
    Value chars = a.get(0, "chars");
    if (chars.is_none()) return Value::string(py_strip(s, left, right));
    return Value::string(py_strip_chars(s, str_arg(chars, name.c_str()), left, right));
  };
  if (name == "strip") return chars_or_ws(true, true);
  if (name == "lstrip") return chars_or_ws(true, false);
  if (name == "rstrip") return chars_or_ws(false, true);
  if (name == "upper") return Value::string(py_upper(s));
  if (name == "lower" || name == "casefold") return Value::string(py_lower(s));
  if (name == "title") return Value::string(py_title_str(s));
  if (name == "capitalize") return Value::string(py_capitalize(s));
  if (name == "startswith" || name == "endswith")
    return Value::boolean(affix(s, a.get(0, "prefix"), name == "startswith", a));
  if (name == "split" || name == "rsplit") {
    Value sep = a.get(0, "sep");
    int64_t maxsplit = a.has(1, "maxsplit") ? int_arg(a.get(1, "maxsplit"), "split") : -1;
    if (sep.is_none()) {
      if (name == "rsplit" && maxsplit >= 0) {  // rsplit(None, n): split from the right
        std::u32string u = utf8_decode(s);
        std::reverse(u.begin(), u.end());
        List parts = split_ws(u, maxsplit);
        std::reverse(parts.begin(), parts.end());
        for (auto& p : parts) {
          std::u32string x = utf8_decode(p.s);
          std::reverse(x.begin(), x.end());
          p.s = utf8_encode(x);
        }
        return Value::make_list(std::move(parts));
      }
      return Value::make_list(split_ws(utf8_decode(s), maxsplit));
    }
    std::string sp = str_arg(sep, name.c_str());
    return Value::make_list(name == "split" ? split_sep(s, sp, maxsplit)
                                            : rsplit_sep(s, sp, maxsplit));
  }
  if (name == "splitlines") {
    bool keep = truthy(a.get(0, "keepends", Value::boolean(false)));
    List out;
    std::u32string u = utf8_decode(s);
    size_t i = 0;
    while (i < u.size()) {
      size_t j = i;
      while (j < u.size() &&
             !(u[j] == '\n' || u[j] == '\r' || u[j] == 0x0B || u[j] == 0x0C || u[j] == 0x1C ||
               u[j] == 0x1D || u[j] == 0x1E || u[j] == 0x85 || u[j] == 0x2028 || u[j] == 0x2029))
        ++j;
      size_t e = j;
      if (j < u.size()) e = (u[j] == '\r' && j + 1 < u.size() && u[j + 1] == '\n') ? j + 2 : j + 1;
      out.push_back(Value::string(utf8_encode(u.substr(i, (keep ? e : j) - i))));
      i = e;
    }
    return Value::make_list(std::move(out));
  }
  if (name == "replace") {
    int64_t count = a.has(2, "count") ? int_arg(a.get(2, "count"), "replace") : -1;
    return Value::string(replace_all(s, str_arg(a.get(0, "old"), "replace"),
                                     str_arg(a.get(1, "new"), "replace"), count));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    std::string sub = str_arg(a.get(0, "sub"), name.c_str());
    if (name == "count") {
      if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s)) + 1);
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value::integer(n);
    }
    size_t p = (name == "find" || name == "index") ? s.find(sub) : s.rfind(sub);
    if (p == std::string::npos) {
      if (name == "index" || name == "rindex") throw RuntimeError("substring not found");
      return Value::integer(-1);
    }
    return Value::integer(static_cast<int64_t>(utf8_length(s.substr(0, p))));
  }
  if (name == "join") {
    std::string out;
    bool first = true;
    for (const auto& x : iterate(a.get(0, "iterable"))) {
      if (!x.is_string())
        throw RuntimeError("sequence item: expected str instance, " + type_name(x) + " found");
      charge_bytes((first ? 0 : s.size()) + x.s.size());
      if (!first) out += s;
      first = false;
      out += x.s;
    }
    return Value::string(out);
  }
  if (name == "format") return Value::string(py_format(s, a));
  if (name == "removeprefix" || name == "removesuffix") {
    std::string t = str_arg(a.get(0, "affix"), name.c_str());
    if (name == "removeprefix" && s.compare(0, t.size(), t) == 0)
      return Value::string(s.substr(t.size()));
    if (name == "removesuffix" && !t.empty() && s.size() >= t.size() &&
        s.compare(s.size() - t.size(), t.size(), t) == 0)
      return Value::string(s.substr(0, s.size() - t.size()));
    return Value::string(s);
  }
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
      name == "isupper" || name == "islower") {
    std::u32string u = utf8_decode(s);
    if (u.empty()) return Value::boolean(false);
    if (name == "isupper" || name == "islower") {
      bool any = false;
      for (char32_t c : u) {
        if (name == "isupper" ? py_islower(c) : py_isupper(c)) return Value::boolean(false);
        any = any || cased(c);
      }
      return Value::boolean(any);
    }
    for (char32_t c : u) {
      bool ok = name == "isdigit"   ? py_isdigit(c)
                : name == "isalpha" ? py_isalpha(c)
                : name == "isalnum" ? py_isalnum(c)
                                    : py_isspace(c);
      if (!ok) return Value::boolean(false);
    }
    return Value::boolean(true);
  }
  throw RuntimeError("'str' object has no attribute '" + name + "'");
}

const char* kStrMethods[] = {"strip",    "lstrip",       "rstrip",       "upper",      "lower",
                             "casefold", "title",        "capitalize",   "startswith", "endswith",
                             "split",    "rsplit",       "splitlines",   "replace",    "find",
                             "rfind",    "index",        "rindex",       "count",      "join",
                             "format",   "removeprefix", "removesuffix", "isdigit",    "isalpha",
                             "isalnum",  "isspace",      "isupper",      "islower"};

}  // namespace

Value get_method(const Value& obj, const std::string& name) {
  if (obj.is_string()) {
    for (const char* m : kStrMethods)
      if (name == m) {
        std::string s = obj.s;
        return Value::function("str." + name,
                               [s, name](CallArgs& a) { return str_method(s, name, a); });
      }
    return Value::undefined("");
  }
  if (obj.type == Type::Dict) {
    auto d = obj.dict;
    if (name == "items" || name == "keys" || name == "values") {
      return Value::function("dict." + name, [d, name](CallArgs& a) {
        a.check(("dict." + name).c_str(), 0, {});
        List out;
        for (const auto& [k, v] : d->items) {
          if (name == "items")
            out.push_back(Value::make_list({k, v}, /*tuple=*/true));
          else
            out.push_back(name == "keys" ? k : v);
        }
        return Value::make_list(std::move(out));
      });
    }
    if (name == "get") {
      return Value::function("dict.get", [d](CallArgs& a) {
        a.check("dict.get", 2, {});
        if (a.pos.empty()) throw RuntimeError("get expected at least 1 argument, got 0");
        const Value* v = d->find(a.pos[0]);
        return v ? *v : (a.pos.size() > 1 ? a.pos[1] : Value::none());
      });
    }
    return Value::undefined("");
  }
  if (obj.type == Type::List && (name == "index" || name == "count")) {
    auto l = obj.list;
    return Value::function("list." + name, [l, name](CallArgs& a) {
      a.check(("list." + name).c_str(), 1, {});
      if (a.pos.empty()) throw RuntimeError(name + "() takes exactly one argument (0 given)");
      int64_t n = 0;
      for (size_t k = 0; k < l->size(); ++k)
        if (equals((*l)[k], a.pos[0])) {
          if (name == "index") return Value::integer(static_cast<int64_t>(k));
          ++n;
        }
      if (name == "index") throw RuntimeError(py_repr(a.pos[0]) + " is not in list");
      return Value::integer(n);
    });
  }
  return Value::undefined("");
}

}  // namespace tessera::jinja
