// JSON Schema to grammar expressions. Keys are emitted in the order `properties` lists them (as
// OpenAI's strict mode and llama.cpp do), required ones always, optional ones maybe; an object
// without additionalProperties true takes no other keys. Whitespace: at most one space or
// newline after '{', '[', ',' and ':' and before '}' and ']', so that an output whose strings
// are bounded ends within a length the schema implies. Numbers: at most 16 integer and 16
// fraction digits and a 2-digit exponent, for the same reason (and so that every number is
// finite as a double).
#include "grammar/json_schema.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/check.h"
#include "grammar/int_range.h"
#include "grammar/parse.h"

namespace tessera::grammar {

namespace {

using json = nlohmann::ordered_json;  // keeps "properties" in the order given

Expr lit(const std::string& s) {
  return Expr::literal(s);
}
Expr rule_ref(const std::string& n) {
  return Expr::ref(n);
}
Expr seq(std::vector<Expr> k) {
  return Expr::seq(std::move(k));
}
Expr opt(Expr e) {
  return Expr::repeat(std::move(e), 0, 1);
}

// The 4 hex digits after "\u": a code point outside the surrogates, or a high surrogate with its
// low one (JSON parsers such as nlohmann's and Python's strict mode refuse a lone surrogate).
Expr unicode_escape() {
  const std::vector<CodeRange> hx = {{'0', '9'}, {'A', 'F'}, {'a', 'f'}};
  auto h = [&] { return Expr::chars(hx); };
  auto d = [] { return Expr::chars({{'d', 'd'}, {'D', 'D'}}); };
  Expr plain =
      Expr::alt({seq({Expr::chars({{'0', '9'}, {'A', 'C'}, {'a', 'c'}, {'E', 'F'}, {'e', 'f'}}),
                      h(), h(), h()}),
                 seq({d(), Expr::chars({{'0', '7'}}), h(), h()})});
  Expr pair = seq({d(), Expr::chars({{'8', '9'}, {'A', 'B'}, {'a', 'b'}}), h(), h(), lit("\\u"),
                   d(), Expr::chars({{'C', 'F'}, {'c', 'f'}}), h(), h()});
  return Expr::alt({std::move(plain), std::move(pair)});
}

// Annotations and keywords with nothing to enforce in the text.
const std::set<std::string> kIgnored = {"title",    "description", "default",      "examples",
                                        "$schema",  "$id",         "$comment",     "strict",
                                        "readOnly", "writeOnly",   "deprecated",   "nullable",
                                        "$defs",    "definitions", "discriminator"};

class SchemaCompiler {
 public:
  explicit SchemaCompiler(json root) : root_(std::move(root)) {}

  ExprGrammar run() {
    g_.rules.push_back({"root", value(root_, "")});
    return std::move(g_);
  }

  ExprGrammar any_object() {
    g_.rules.push_back({"root", rule_ref(common("object"))});
    return std::move(g_);
  }

 private:
  [[noreturn]] void error(const std::string& at, const std::string& what) const {
    fail_arg("schema at " + (at.empty() ? std::string("/") : at) + ": " + what);
  }

  std::string fresh(const std::string& hint) { return hint + std::to_string(++counter_); }
  std::string add(const std::string& hint, Expr e) {
    std::string n = fresh(hint);
    g_.rules.push_back({n, std::move(e)});
    return n;
  }

  // The shared rules, added once when first used.
  std::string common(const std::string& name) {
    if (!common_.insert(name).second) return name;
    Expr e;
    if (name == "ws") {
      e = opt(Expr::chars({{' ', ' '}, {'\n', '\n'}}));
    } else if (name == "char") {
      std::vector<CodeRange> plain = negate({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
      e = Expr::alt(
          {Expr::chars(plain), seq({lit("\\"), Expr::alt({Expr::chars({{'"', '"'},
                                                                       {'\\', '\\'},
                                                                       {'/', '/'},
                                                                       {'b', 'b'},
                                                                       {'f', 'f'},
                                                                       {'n', 'n'},
                                                                       {'r', 'r'},
                                                                       {'t', 't'}}),
                                                          seq({lit("u"), unicode_escape()})})})});
    } else if (name == "string") {
      e = seq({lit("\""), Expr::repeat(rule_ref(common("char")), 0, -1), lit("\"")});
    } else if (name == "integer") {
      e = seq({opt(lit("-")),
               Expr::alt({lit("0"), seq({Expr::chars({{'1', '9'}}),
                                         Expr::repeat(Expr::chars({{'0', '9'}}), 0, 15)})})});
    } else if (name == "number") {
      Expr digits = Expr::chars({{'0', '9'}});
      e = seq({rule_ref(common("integer")), opt(seq({lit("."), Expr::repeat(digits, 1, 16)})),
               opt(seq({Expr::chars({{'e', 'e'}, {'E', 'E'}}),
                        opt(Expr::chars({{'-', '-'}, {'+', '+'}})), Expr::repeat(digits, 1, 2)}))});
    } else if (name == "boolean") {
      e = Expr::alt({lit("true"), lit("false")});
    } else if (name == "null") {
      e = lit("null");
    } else if (name == "value") {
      e = Expr::alt({rule_ref(common("object")), rule_ref(common("array")),
                     rule_ref(common("string")), rule_ref(common("number")),
                     rule_ref(common("boolean")), rule_ref(common("null"))});
    } else if (name == "object") {
      const std::string ws = common("ws");
      Expr member =
          seq({rule_ref(common("string")), lit(":"), rule_ref(ws), rule_ref(common("value"))});
      e = seq({lit("{"), rule_ref(ws),
               opt(seq({member, Expr::repeat(seq({lit(","), rule_ref(ws), member}), 0, -1),
                        rule_ref(ws)})),
               lit("}")});
    } else if (name == "array") {
      const std::string ws = common("ws");
      Expr v = rule_ref(common("value"));
      e = seq({lit("["), rule_ref(ws),
               opt(seq({v, Expr::repeat(seq({lit(","), rule_ref(ws), v}), 0, -1), rule_ref(ws)})),
               lit("]")});
    } else {
      TS_ASSERT(false);
    }
    g_.rules.push_back({name, std::move(e)});
    return name;
  }

  // A "#/..." pointer into the root schema.
  const json& resolve(const std::string& at, const std::string& r) {
    if (r.empty() || r[0] != '#') error(at, "only local $ref (\"#/$defs/...\") is supported");
    try {
      const json& t = r.size() == 1 ? root_ : root_.at(json::json_pointer(r.substr(1)));
      return t;
    } catch (const std::exception&) {
      error(at, "$ref '" + r + "' does not resolve");
    }
  }

  Expr value(const json& s, const std::string& at) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) error(at, "the schema 'false' matches nothing");
      return rule_ref(common("value"));
    }
    if (!s.is_object()) error(at, "a schema must be an object or a boolean");
    for (auto it = s.begin(); it != s.end(); ++it) check_keyword(it.key(), at);
    if (s.contains("$ref")) {
      const std::string r = s["$ref"].is_string() ? s["$ref"].get<std::string>() : "";
      auto found = refs_.find(r);
      if (found != refs_.end()) return rule_ref(found->second);
      const std::string name = fresh("ref");
      refs_[r] = name;  // before compiling it: recursive schemas refer to the rule by name
      const json& target = resolve(at, r);
      g_.rules.push_back({name, value(target, r.substr(1))});
      return rule_ref(name);
    }
    if (s.contains("const")) return lit(s["const"].dump());
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) error(at, "'enum' must be a non-empty array");
      std::vector<Expr> alts;
      for (const json& v : s["enum"]) alts.push_back(lit(v.dump()));
      return Expr::alt(std::move(alts));
    }
    for (const char* k : {"anyOf", "oneOf"})
      if (s.contains(k)) {
        if (!s[k].is_array() || s[k].empty())
          error(at, std::string("'") + k + "' must be a non-empty array");
        std::vector<Expr> alts;
        for (size_t i = 0; i < s[k].size(); ++i)
          alts.push_back(value(s[k][i], at + "/" + k + "/" + std::to_string(i)));
        return Expr::alt(std::move(alts));
      }
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array() || s["allOf"].size() != 1)
        error(at, "'allOf' is supported with one schema only");
      return value(s["allOf"][0], at + "/allOf/0");
    }
    if (!s.contains("type")) {
      if (s.contains("properties")) return object(s, at);
      if (s.contains("items")) return array(s, at);
      return rule_ref(common("value"));
    }
    const json& t = s["type"];
    if (t.is_array()) {
      std::vector<Expr> alts;
      for (const json& one : t) alts.push_back(typed(s, one, at));
      if (alts.empty()) error(at, "'type' is an empty array");
      return Expr::alt(std::move(alts));
    }
    return typed(s, t, at);
  }

  void check_keyword(const std::string& k, const std::string& at) const {
    static const std::set<std::string> known = {"type",
                                                "properties",
                                                "required",
                                                "additionalProperties",
                                                "items",
                                                "minItems",
                                                "maxItems",
                                                "enum",
                                                "const",
                                                "anyOf",
                                                "oneOf",
                                                "allOf",
                                                "$ref",
                                                "minLength",
                                                "maxLength",
                                                "pattern",
                                                "format",
                                                "prefixItems",
                                                "minimum",
                                                "maximum",
                                                "exclusiveMinimum",
                                                "exclusiveMaximum"};
    if (known.count(k) || kIgnored.count(k)) return;
    error(at, "unsupported keyword '" + k + "'");
  }

  Expr typed(const json& s, const json& t, const std::string& at) {
    if (!t.is_string()) error(at, "'type' must be a string or an array of strings");
    const std::string type = t.get<std::string>();
    if (type == "object") return object(s, at);
    if (type == "array") return array(s, at);
    if (type == "string") return string(s, at);
    if (type == "number") {
      for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
        if (s.contains(k))
          error(at, std::string("'") + k + "' is supported on integers only, not on numbers");
      return rule_ref(common("number"));
    }
    if (type == "integer") return integer(s, at);
    if (type == "boolean") return rule_ref(common("boolean"));
    if (type == "null") return rule_ref(common("null"));
    error(at, "unknown type '" + type + "'");
  }

  static int count(const json& s, const char* k, int dflt, const std::string& at,
                   const SchemaCompiler& c) {
    if (!s.contains(k)) return dflt;
    if (!s[k].is_number_integer() || s[k].get<int64_t>() < 0 || s[k].get<int64_t>() > 10000)
      c.error(at, std::string("'") + k + "' must be an integer in [0, 10000]");
    return s[k].get<int>();
  }

  // An integer within minimum / maximum (exclusive forms included) when the schema bounds it.
  Expr integer(const json& s, const std::string& at) {
    std::optional<int64_t> lo, hi;
    auto bound = [&](const char* k, int64_t adjust, std::optional<int64_t>& b, bool is_lo) {
      if (!s.contains(k)) return;
      const json& v = s[k];
      if (!v.is_number()) error(at, std::string("'") + k + "' must be a number");
      const double d = v.get<double>();
      if (std::fabs(d) > 1e16) return;  // beyond the 16 digits the grammar allows anyway
      int64_t x = 0;
      bool exact = true;
      if (v.is_number_integer()) {
        x = v.get<int64_t>();  // exactly, past what a double holds
      } else {
        x = static_cast<int64_t>(is_lo ? std::ceil(d) : std::floor(d));
        exact = static_cast<double>(x) == d;
      }
      if (exact) x += adjust;
      b = b ? (is_lo ? std::max(*b, x) : std::min(*b, x)) : x;
    };
    bound("minimum", 0, lo, true);
    bound("exclusiveMinimum", 1, lo, true);
    bound("maximum", 0, hi, false);
    bound("exclusiveMaximum", -1, hi, false);
    if (!lo && !hi) return rule_ref(common("integer"));
    if (lo && hi && *lo > *hi) error(at, "no integer lies within 'minimum' and 'maximum'");
    return integer_range(lo, hi);
  }

  Expr string(const json& s, const std::string& at) {
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) error(at, "'pattern' must be a string");
      Expr body;
      try {
        body = parse_regex(s["pattern"].get<std::string>());
      } catch (const Error& e) {
        error(at, std::string("'pattern': ") + e.what());
      }
      // The pattern's characters stand for themselves in the JSON text: none may need escaping.
      forbid_escapes(body);
      return seq({lit("\""), std::move(body), lit("\"")});
    }
    if (s.contains("format")) {
      const std::string f = s["format"].is_string() ? s["format"].get<std::string>() : "";
      static const std::map<std::string, std::string> formats = {
          {"date", R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))"},
          {"time", R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))"},
          {"date-time",
           R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))"},
          {"uuid", R"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"},
          {"email", R"([A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63}){1,4})"},
          {"ipv4", R"(((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))"}};
      auto it = formats.find(f);
      if (it == formats.end()) error(at, "unsupported string format '" + f + "'");
      return seq({lit("\""), parse_regex(it->second), lit("\"")});
    }
    const int mn = count(s, "minLength", 0, at, *this), mx = count(s, "maxLength", -1, at, *this);
    if (mx >= 0 && mx < mn) error(at, "'maxLength' is below 'minLength'");
    if (mn == 0 && mx < 0) return rule_ref(common("string"));
    return seq({lit("\""), Expr::repeat(rule_ref(common("char")), mn, mx), lit("\"")});
  }

  static void forbid_escapes(Expr& e) {
    if (e.kind == Expr::Kind::chars) {
      std::vector<CodeRange> bad = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
      std::vector<CodeRange> keep;
      for (CodeRange r : e.ranges) {  // r minus bad
        uint32_t lo = r.lo;
        for (CodeRange b : bad) {
          if (b.hi < lo || b.lo > r.hi) continue;
          if (b.lo > lo) keep.push_back({lo, b.lo - 1});
          lo = std::max(lo, b.hi + 1);
        }
        if (lo <= r.hi) keep.push_back({lo, r.hi});
      }
      e.ranges = Expr::chars(keep).ranges;
    }
    for (Expr& k : e.kids) forbid_escapes(k);
  }

  Expr array(const json& s, const std::string& at) {
    const int mn = count(s, "minItems", 0, at, *this), mx = count(s, "maxItems", -1, at, *this);
    if (mx >= 0 && mx < mn) error(at, "'maxItems' is below 'minItems'");
    const std::string ws = common("ws");
    std::vector<Expr> items;
    if (s.contains("prefixItems")) {
      if (!s["prefixItems"].is_array()) error(at, "'prefixItems' must be an array");
      std::vector<Expr> parts{lit("["), rule_ref(ws)};
      for (size_t i = 0; i < s["prefixItems"].size(); ++i) {
        if (i) parts.push_back(lit(",")), parts.push_back(rule_ref(ws));
        parts.push_back(value(s["prefixItems"][i], at + "/prefixItems/" + std::to_string(i)));
      }
      parts.push_back(rule_ref(ws));
      parts.push_back(lit("]"));
      return seq(std::move(parts));
    }
    const Expr item = s.contains("items") ? rule_ref(add("item", value(s["items"], at + "/items")))
                                          : rule_ref(common("value"));
    Expr more = seq({lit(","), rule_ref(ws), item});
    Expr body;
    if (mx == 0) return seq({lit("["), rule_ref(ws), lit("]")});
    Expr list =
        seq({item, Expr::repeat(more, mn > 0 ? mn - 1 : 0, mx < 0 ? -1 : mx - 1), rule_ref(ws)});
    return seq(
        {lit("["), rule_ref(ws), mn == 0 ? opt(std::move(list)) : std::move(list), lit("]")});
  }

  Expr object(const json& s, const std::string& at) {
    if (!s.contains("properties")) {
      const json ap = s.value("additionalProperties", json(true));
      if (ap.is_boolean() && !ap.get<bool>()) return lit("{}");
      if (ap.is_object()) return map_object(ap, at);
      return rule_ref(common("object"));
    }
    const json& props = s["properties"];
    if (!props.is_object()) error(at, "'properties' must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) error(at, "'required' must be an array");
      for (const json& r : s["required"]) {
        if (!r.is_string() || !props.contains(r.get<std::string>()))
          error(at, "'required' names " + r.dump() + ", which is not in 'properties'");
        required.insert(r.get<std::string>());
      }
    }
    const std::string ws = common("ws");
    struct Prop {
      Expr kv;
      bool req;
    };
    std::vector<Prop> list;
    for (auto it = props.begin(); it != props.end(); ++it) {
      Expr v = value(it.value(), at + "/properties/" + it.key());
      list.push_back({seq({lit(json(it.key()).dump()), lit(":"), rule_ref(ws), std::move(v)}),
                      required.count(it.key()) > 0});
    }
    // first_i: members from i on with none written yet; rest_i: with one written (a comma
    // first). Linear in the number of properties whatever is optional.
    std::string first = add("objend", Expr::seq()), rest = first;
    for (size_t k = list.size(); k-- > 0;) {
      Expr with_first = seq({list[k].kv, rule_ref(rest)});
      Expr with_rest = seq({lit(","), rule_ref(ws), list[k].kv, rule_ref(rest)});
      std::string nf =
          add("objf", list[k].req ? std::move(with_first)
                                  : Expr::alt({std::move(with_first), rule_ref(first)}));
      std::string nr = add("objr", list[k].req ? std::move(with_rest)
                                               : Expr::alt({std::move(with_rest), rule_ref(rest)}));
      first = nf;
      rest = nr;
    }
    return seq({lit("{"), rule_ref(ws), rule_ref(first), rule_ref(ws), lit("}")});
  }

  Expr map_object(const json& ap, const std::string& at) {
    const std::string ws = common("ws");
    Expr v = rule_ref(add("mapval", value(ap, at + "/additionalProperties")));
    Expr member = seq({rule_ref(common("string")), lit(":"), rule_ref(ws), v});
    return seq({lit("{"), rule_ref(ws),
                opt(seq({member, Expr::repeat(seq({lit(","), rule_ref(ws), member}), 0, -1),
                         rule_ref(ws)})),
                lit("}")});
  }

  json root_;
  ExprGrammar g_;
  std::set<std::string> common_;
  std::map<std::string, std::string> refs_;
  int counter_ = 0;
};

}  // namespace

ExprGrammar json_schema_grammar(const std::string& schema_json) {
  json s;
  try {
    s = json::parse(schema_json);
  } catch (const std::exception& e) {
    fail_arg(std::string("the schema is not valid JSON: ") + e.what());
  }
  return SchemaCompiler(std::move(s)).run();
}

ExprGrammar json_object_grammar() {
  return SchemaCompiler(json::object()).any_object();
}

}  // namespace tessera::grammar
