// Lowering grammar expressions to byte-level rules (expr.h -> grammar.h), then the checks the
// matcher relies on: every rule defined and able to finish, and no left recursion (the matcher
// expands rule references eagerly, as llama.cpp's llama_grammar_advance_stack does, which would
// never end on a left-recursive rule).
#include <algorithm>
#include <map>

#include "core/check.h"
#include "grammar/expr.h"
#include "grammar/utf8_ranges.h"

namespace tessera::grammar {

Expr Expr::chars(std::vector<CodeRange> r) {
  std::sort(r.begin(), r.end(), [](CodeRange a, CodeRange b) { return a.lo < b.lo; });
  Expr e;
  e.kind = Kind::chars;
  for (CodeRange c : r) {
    if (!e.ranges.empty() && c.lo <= e.ranges.back().hi + 1)
      e.ranges.back().hi = std::max(e.ranges.back().hi, c.hi);
    else
      e.ranges.push_back(c);
  }
  return e;
}

Expr Expr::literal(const std::string& s) {
  std::vector<Expr> k;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    const int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t c = n == 1 ? b : n == 2 ? b & 0x1F : n == 3 ? b & 0x0F : b & 0x07;
    for (int j = 1; j < n && i + j < s.size(); ++j) c = (c << 6) | (s[i + j] & 0x3F);
    k.push_back(codepoint(c));
    i += n;
  }
  return seq(std::move(k));
}

std::vector<CodeRange> negate(const std::vector<CodeRange>& r) {
  std::vector<CodeRange> out;
  uint32_t next = 0;
  for (CodeRange c : Expr::chars(r).ranges) {
    if (c.lo > next) out.push_back({next, c.lo - 1});
    next = c.hi + 1;
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return out;
}

namespace {

constexpr int kMaxCount = 10000;
using Seq = std::vector<Elem>;

class Lowerer {
 public:
  explicit Lowerer(const ExprGrammar& g) : src_(g) {
    for (const auto& [name, e] : g.rules)
      if (!ids_.count(name)) ids_[name] = new_rule(name);
  }

  Grammar run() {
    std::vector<std::vector<Seq>> bodies(rules_.size());
    for (const auto& [name, e] : src_.rules) {
      std::vector<Seq> alts = alternatives(e);
      auto& b = rules_[ids_.at(name)];
      b.insert(b.end(), alts.begin(), alts.end());
    }
    auto root = ids_.find(src_.root);
    if (root == ids_.end()) fail_arg("the grammar has no rule named '" + src_.root + "'");
    Grammar g;
    g.root = root->second;
    g.names = names_;
    for (const auto& alts : rules_) {
      g.alts.emplace_back();
      for (const Seq& s : alts) {
        g.alts.back().push_back(static_cast<int32_t>(g.elems.size()));
        g.elems.insert(g.elems.end(), s.begin(), s.end());
        g.elems.push_back(Elem{});
      }
    }
    return g;
  }

 private:
  int32_t new_rule(const std::string& name) {
    rules_.emplace_back();
    names_.push_back(name);
    return static_cast<int32_t>(rules_.size() - 1);
  }
  int32_t generated(const std::string& base, std::vector<Seq> alts) {
    const int32_t id = new_rule(base + "#" + std::to_string(rules_.size()));
    rules_[id] = std::move(alts);
    return id;
  }
  static Elem ref(int32_t id) {
    Elem e;
    e.type = Elem::Type::ref;
    e.rule = id;
    return e;
  }

  std::vector<Seq> alternatives(const Expr& e) {
    if (e.kind != Expr::Kind::alt) return {sequence(e)};
    std::vector<Seq> out;
    for (const Expr& k : e.kids) {
      std::vector<Seq> a = alternatives(k);
      out.insert(out.end(), a.begin(), a.end());
    }
    return out;
  }

  Seq sequence(const Expr& e) {
    Seq out;
    append(e, out);
    return out;
  }

  void append(const Expr& e, Seq& out) {
    switch (e.kind) {
      case Expr::Kind::seq:
        for (const Expr& k : e.kids) append(k, out);
        return;
      case Expr::Kind::alt:
        if (e.kids.size() == 1) return append(e.kids[0], out);
        out.push_back(ref(generated("alt", alternatives(e))));
        return;
      case Expr::Kind::ref: {
        auto it = ids_.find(e.name);
        if (it == ids_.end()) fail_arg("the grammar refers to an undefined rule '" + e.name + "'");
        out.push_back(ref(it->second));
        return;
      }
      case Expr::Kind::chars:
        return append_chars(e.ranges, out);
      case Expr::Kind::repeat:
        return append_repeat(e, out);
    }
  }

  void append_chars(const std::vector<CodeRange>& ranges, Seq& out) {
    Elem ascii;
    ascii.type = Elem::Type::bytes;
    std::vector<ByteSeq> multi;
    for (CodeRange r : ranges) {
      for (const ByteSeq& s : utf8_sequences(r.lo, r.hi)) {
        if (s.size() == 1)
          ascii.set.add(s[0].lo, s[0].hi);
        else
          multi.push_back(s);
      }
    }
    if (multi.empty()) return out.push_back(ascii);
    std::vector<Seq> alts;
    if (ascii.set != ByteSet{}) alts.push_back({ascii});
    for (const ByteSeq& s : multi) {
      Seq q;
      for (ByteRange b : s) {
        Elem x;
        x.type = Elem::Type::bytes;
        x.set.add(b.lo, b.hi);
        q.push_back(x);
      }
      alts.push_back(q);
    }
    // One rule per distinct class, so that "any string character" is expanded once.
    std::string key;
    for (CodeRange r : ranges) key += std::to_string(r.lo) + "-" + std::to_string(r.hi) + ",";
    auto it = char_rules_.find(key);
    if (it == char_rules_.end()) it = char_rules_.emplace(key, generated("char", alts)).first;
    out.push_back(ref(it->second));
  }

  // x{min,max}: min copies of x, then x* as S ::= x S | "" or (max - min) nested optionals
  // O ::= x O' | "" (llama.cpp's build_repetition), which keep the matcher's stack sets small.
  void append_repeat(const Expr& e, Seq& out) {
    if (e.min < 0 || e.min > kMaxCount || e.max > kMaxCount || (e.max >= 0 && e.max < e.min))
      fail_arg("a repetition count must be within 0..10000 with min <= max (got {" +
               std::to_string(e.min) + "," + std::to_string(e.max) + "})");
    const Seq x = sequence(e.kids[0]);
    for (int i = 0; i < e.min; ++i) out.insert(out.end(), x.begin(), x.end());
    if (e.max < 0) {
      const int32_t s = new_rule("star#" + std::to_string(rules_.size()));
      Seq loop = x;
      loop.push_back(ref(s));
      rules_[s] = {loop, Seq{}};
      out.push_back(ref(s));
      return;
    }
    int32_t tail = -1;
    for (int i = e.min; i < e.max; ++i) {
      Seq more = x;
      if (tail >= 0) more.push_back(ref(tail));
      tail = generated("opt", {more, Seq{}});
    }
    if (tail >= 0) out.push_back(ref(tail));
  }

  const ExprGrammar& src_;
  std::map<std::string, int32_t> ids_;
  std::map<std::string, int32_t> char_rules_;
  std::vector<std::vector<Seq>> rules_;
  std::vector<std::string> names_;
};

// Which rules can match the empty string, and which can match anything at all (fixed points).
void check(const Grammar& g) {
  const int n = g.num_rules();
  std::vector<char> nullable(n, 0), productive(n, 0);
  auto alt_ok = [&](int32_t start, const std::vector<char>& ok, bool bytes_ok) {
    for (int32_t p = start; g.elems[p].type != Elem::Type::end; ++p) {
      const Elem& e = g.elems[p];
      if (e.type == Elem::Type::bytes ? !bytes_ok : !ok[e.rule]) return false;
    }
    return true;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (int r = 0; r < n; ++r)
      for (int32_t a : g.alts[r]) {
        if (!nullable[r] && alt_ok(a, nullable, false)) nullable[r] = 1, changed = true;
        if (!productive[r] && alt_ok(a, productive, true)) productive[r] = 1, changed = true;
      }
  }
  for (int r = 0; r < n; ++r)
    if (!productive[r])
      fail_arg("the grammar's rule '" + g.names[r] + "' can never finish (every alternative " +
               "refers to itself without end, or it has none)");
  // Left calls: rule r reaches rule q at an alternative's start or after nullable elements.
  std::vector<std::vector<int32_t>> left(n);
  for (int r = 0; r < n; ++r)
    for (int32_t a : g.alts[r])
      for (int32_t p = a; g.elems[p].type == Elem::Type::ref; ++p) {
        left[r].push_back(g.elems[p].rule);
        if (!nullable[g.elems[p].rule]) break;
      }
  std::vector<char> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<int32_t, size_t>> path;
  for (int r0 = 0; r0 < n; ++r0) {
    if (color[r0]) continue;
    path.push_back({r0, 0});
    color[r0] = 1;
    while (!path.empty()) {
      auto& [r, i] = path.back();
      if (i == left[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      const int32_t q = left[r][i++];
      if (color[q] == 1)
        fail_arg("the grammar's rule '" + g.names[q] +
                 "' is left-recursive (it can refer to itself before matching anything)");
      if (color[q] == 0) color[q] = 1, path.push_back({q, 0});
    }
  }
}

}  // namespace

Grammar lower(const ExprGrammar& src) {
  Grammar g = Lowerer(src).run();
  check(g);
  return g;
}

}  // namespace tessera::grammar
