#include "chat/jinja_eval.h"

#include <ctime>
#include <memory>

#include "chat/jinja_filters.h"
#include "chat/jinja_ops.h"

namespace tessera::jinja {
namespace {

constexpr int kMaxCallDepth = 64;      // macro recursion
constexpr int kMaxEvalDepth = 2000;    // nested statements + expressions, all macro levels
constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE
// A render's work budget (issue #29): the depth and range limits bound one loop, not loops
// nested in loops (100000^3 iterations) nor a string doubled in a loop (2^k bytes), which ran
// for minutes or took gigabytes. Real chat templates take a few dozen steps per message
// (Gemma 3's and Qwen 3's about 30: 70000 messages fit) and build about their output's size in
// strings. A step costs about 1 us: a template that runs out has taken two seconds.
constexpr int64_t kMaxSteps = int64_t{1} << 21;          // statements + expressions evaluated
constexpr uint64_t kMaxStringBytes = uint64_t{1} << 28;  // bytes of all strings evaluated
constexpr size_t kMaxOutputBytes = size_t{1} << 26;      // one output buffer

struct Frame {
  std::vector<std::pair<std::string, Value>> vars;
  Value* find(const std::string& n) {
    for (auto& kv : vars)
      if (kv.first == n) return &kv.second;
    return nullptr;
  }
  void set(const std::string& n, Value v) {
    if (Value* p = find(n)) {
      *p = std::move(v);
    } else {
      vars.emplace_back(n, std::move(v));
    }
  }
};

enum class Flow { Normal, Break, Continue };

Value strftime_now(CallArgs& a) {
  a.check("strftime_now", 1, {"format"});
  std::string fmt = py_str(a.get(0, "format", Value::string("")));
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  if (fmt.empty()) return Value::string("");
  for (size_t cap = 256; cap <= (1u << 20); cap *= 4) {
    std::string buf(cap, '\0');
    size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
    if (n > 0) return Value::string(buf.substr(0, n));
  }
  return Value::string("");  // a format whose expansion is empty
}

Value range_fn(CallArgs& a) {
  a.check("range", 3, {});
  auto as_int = [](const Value& v) {
    if (v.type == Type::Int) return v.i;
    if (v.type == Type::Bool) return static_cast<int64_t>(v.b);
    throw RuntimeError("'" + type_name(v) + "' object cannot be interpreted as an integer");
  };
  if (a.pos.empty()) throw RuntimeError("range expected at least 1 argument, got 0");
  int64_t start = 0, stop, step = 1;
  if (a.pos.size() == 1) {
    stop = as_int(a.pos[0]);
  } else {
    start = as_int(a.pos[0]);
    stop = as_int(a.pos[1]);
    if (a.pos.size() == 3) step = as_int(a.pos[2]);
  }
  if (step == 0) throw RuntimeError("range() arg 3 must not be zero");
  List out;
  for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
    if (static_cast<int64_t>(out.size()) >= kMaxRange)
      throw RuntimeError(
          "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    out.push_back(Value::integer(k));
  }
  return Value::make_list(std::move(out));
}

Value mapping_fn(CallArgs& a, bool ns) {
  Value d = ns ? Value::make_namespace() : Value::make_dict();
  if (a.pos.size() > 1) throw RuntimeError("expected at most 1 positional argument");
  if (!a.pos.empty()) {
    if (a.pos[0].type != Type::Dict) throw RuntimeError("expected a mapping argument");
    for (const auto& kv : a.pos[0].dict->items) d.dict->set(kv.first, kv.second);
  }
  for (const auto& [k, v] : a.kw) d.dict->set(Value::string(k), v);
  return d;
}

class Interp {
 public:
  explicit Interp(const Value& context) : context_(context) {
    builtins_.set("raise_exception", Value::function("raise_exception", [](CallArgs& a) -> Value {
                    throw RaisedError(py_str(a.get(0, "message", Value::string(""))));
                  }));
    builtins_.set("strftime_now", Value::function("strftime_now", strftime_now));
    builtins_.set("range", Value::function("range", range_fn));
    builtins_.set("namespace",
                  Value::function("namespace", [](CallArgs& a) { return mapping_fn(a, true); }));
    builtins_.set("dict",
                  Value::function("dict", [](CallArgs& a) { return mapping_fn(a, false); }));
    frames_.push_back(std::make_shared<Frame>());
  }

  std::string run(const Body& body) {
    std::string out;
    try {
      exec(body, out);
    } catch (const RuntimeError& e) {
      throw RuntimeError("line " + std::to_string(line_) + ": " + e.what());
    }
    return out;
  }

 private:
  // ---- scopes ----
  struct Scope {  // pushes a frame for a loop iteration / with-block, pops it on exit
    explicit Scope(Interp& in) : in(in) { in.frames_.push_back(std::make_shared<Frame>()); }
    ~Scope() { in.frames_.pop_back(); }
    Interp& in;
  };

  Value lookup(const std::string& n) {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it)
      if (Value* v = (*it)->find(n)) return *v;
    if (const Value* v = context_.dict->find(n)) return *v;
    if (Value* v = builtins_.find(n)) return *v;
    return Value::undefined("'" + n + "' is undefined");
  }
  void assign(const std::string& n, Value v) { frames_.back()->set(n, std::move(v)); }

  // One target: a name, or a namespace attribute when `attr` is set.
  void assign_one(const std::string& name, const std::string& attr, Value v) {
    if (attr.empty()) {
      assign(name, std::move(v));
      return;
    }
    Value ns = lookup(name);
    if (ns.type != Type::Namespace)
      throw RuntimeError("cannot assign attribute on non-namespace object");
    ns.dict->set(Value::string(attr), std::move(v));
  }

  void assign_targets(const std::vector<std::string>& targets, bool tuple, const Value& v,
                      const std::vector<std::string>* attrs = nullptr) {
    static const std::string none;
    auto attr = [&](size_t k) -> const std::string& {
      return attrs && k < attrs->size() ? (*attrs)[k] : none;
    };
    if (!tuple) {
      assign_one(targets[0], attr(0), v);
      return;
    }
    if (v.type != Type::List && v.type != Type::String && v.type != Type::Dict && !v.is_undefined())
      throw RuntimeError("cannot unpack non-iterable " + type_name(v) + " object");
    List items = iterate(v);
    if (items.size() != targets.size())
      throw RuntimeError(
          items.size() > targets.size()
              ? "too many values to unpack (expected " + std::to_string(targets.size()) + ")"
              : "not enough values to unpack (expected " + std::to_string(targets.size()) +
                    ", got " + std::to_string(items.size()) + ")");
    for (size_t k = 0; k < targets.size(); ++k) assign_one(targets[k], attr(k), items[k]);
  }

  // ---- statements ----
  Flow exec(const Body& body, std::string& out) {
    for (const auto& s : body) {
      Flow f = exec(*s, out);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  // Bounds the C++ stack: each nested statement or expression is one level.
  struct Nest {
    explicit Nest(Interp& in) : in(in) {
      if (++in.nest_ > kMaxEvalDepth) {
        --in.nest_;
        throw RuntimeError("template nesting too deep at run time");
      }
      if (++in.steps_ > kMaxSteps) {
        --in.nest_;
        throw RuntimeError("the template ran past its work budget of " + std::to_string(kMaxSteps) +
                           " steps (loops nested too deeply?)");
      }
    }
    ~Nest() { --in.nest_; }
    Interp& in;
  };

  Flow exec(const Stmt& s, std::string& out) {
    Nest nest(*this);
    if (s.line) line_ = s.line;
    switch (s.kind) {
      case SK::Output:
        out += s.text;
        check_output(out);
        return Flow::Normal;
      case SK::Emit:
        out += py_str(eval(*s.expr));
        check_output(out);
        return Flow::Normal;
      case SK::If:
        for (const auto& [cond, body] : s.branches) {
          if (truthy(eval(*cond))) return exec(body, out);
        }
        return exec(s.else_body, out);
      case SK::For:
        return exec_for(s, out);
      case SK::Set:
        assign_targets(s.targets, s.target_tuple, eval(*s.expr), &s.attrs);
        return Flow::Normal;
      case SK::SetBlock: {
        std::string text;
        exec(s.body, text);
        Value v = Value::string(std::move(text));
        if (s.expr) v = eval_filter(*s.expr, &v);
        assign_one(s.targets[0], s.attrs[0], std::move(v));
        return Flow::Normal;
      }
      case SK::Macro: {
        const Stmt* m = &s;
        assign(s.text,
               Value::function(s.text, [this, m](CallArgs& a) { return call_macro(*m, a); }));
        return Flow::Normal;
      }
      case SK::CallBlock: {
        const Expr& call = *s.expr;
        Value callee = eval(*call.args[0]);
        CallArgs a = eval_args(call);
        const Stmt* block = &s;
        a.kw.emplace_back("caller", Value::function("caller", [this, block](CallArgs& ca) {
                            return call_macro(*block, ca);
                          }));
        out += py_str(invoke(callee, a));
        return Flow::Normal;
      }
      case SK::FilterBlock: {
        std::string text;
        exec(s.body, text);
        Value v = Value::string(std::move(text));
        out += py_str(eval_filter(*s.expr, &v));
        return Flow::Normal;
      }
      case SK::With: {
        Scope scope(*this);
        for (const auto& [name, e] : s.assigns) assign(name, eval(*e));
        return exec(s.body, out);
      }
      case SK::Break:
        return Flow::Break;
      case SK::Continue:
        return Flow::Continue;
      case SK::Block:
        return exec(s.body, out);
    }
    return Flow::Normal;
  }

  Flow exec_for(const Stmt& s, std::string& out) {
    List items = iterate(eval(*s.expr));
    if (s.cond) {  // "for x in xs if cond": the filter sees the target, not `loop`
      List kept;
      for (const auto& x : items) {
        Scope scope(*this);
        assign_targets(s.targets, s.target_tuple, x);
        if (truthy(eval(*s.cond))) kept.push_back(x);
      }
      items.swap(kept);
    }
    if (items.empty()) {
      Scope scope(*this);
      exec(s.else_body, out);
      return Flow::Normal;
    }
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t k = 0; k < n; ++k) {
      Scope scope(*this);
      assign_targets(s.targets, s.target_tuple, items[static_cast<size_t>(k)]);
      Value loop = Value::make_dict();
      auto set = [&](const char* key, Value v) {
        loop.dict->items.emplace_back(Value::string(key), std::move(v));
      };
      set("index", Value::integer(k + 1));
      set("index0", Value::integer(k));
      set("revindex", Value::integer(n - k));
      set("revindex0", Value::integer(n - k - 1));
      set("first", Value::boolean(k == 0));
      set("last", Value::boolean(k == n - 1));
      set("length", Value::integer(n));
      set("depth", Value::integer(1));
      set("depth0", Value::integer(0));
      set("previtem", k > 0 ? items[static_cast<size_t>(k - 1)]
                            : Value::undefined("there is no previous item"));
      set("nextitem", k + 1 < n ? items[static_cast<size_t>(k + 1)]
                                : Value::undefined("there is no next item"));
      set("cycle", Value::function("loop.cycle", [k](CallArgs& a) {
            if (a.pos.empty()) throw RuntimeError("no items for cycling given");
            return a.pos[static_cast<size_t>(k) % a.pos.size()];
          }));
      assign("loop", loop);
      Flow f = exec(s.body, out);
      if (f == Flow::Break) break;
    }
    return Flow::Normal;
  }

  Value call_macro(const Stmt& m, CallArgs& a) {
    if (++depth_ > kMaxCallDepth) {
      --depth_;
      throw RuntimeError("maximum recursion depth exceeded in macro calls");
    }
    struct Restore {
      Interp& in;
      std::vector<std::shared_ptr<Frame>> saved;
      int line;
      ~Restore() {
        in.frames_ = std::move(saved);
        in.line_ = line;
        --in.depth_;
      }
    } restore{*this, frames_, line_};
    // A macro sees the template's top-level names and its own arguments, not the caller's locals.
    frames_ = {frames_.front(), std::make_shared<Frame>()};
    List varargs;
    Value kwargs = Value::make_dict();
    for (size_t k = 0; k < a.pos.size(); ++k) {
      if (k < m.params.size())
        assign(m.params[k].name, a.pos[k]);
      else
        varargs.push_back(a.pos[k]);
    }
    for (const auto& [name, v] : a.kw) {
      bool is_param = false;
      for (size_t k = 0; k < m.params.size(); ++k)
        if (m.params[k].name == name) {
          if (k < a.pos.size())
            throw RuntimeError("macro '" + m.text + "' got multiple values for argument '" + name +
                               "'");
          is_param = true;
        }
      if (is_param || name == "caller")
        assign(name, v);
      else
        kwargs.dict->set(Value::string(name), v);
    }
    for (size_t k = a.pos.size(); k < m.params.size(); ++k) {
      if (frames_.back()->find(m.params[k].name)) continue;
      assign(m.params[k].name,
             m.params[k].default_value
                 ? eval(*m.params[k].default_value)
                 : Value::undefined("parameter '" + m.params[k].name + "' was not provided"));
    }
    assign("varargs", Value::make_list(std::move(varargs), /*tuple=*/true));
    assign("kwargs", kwargs);
    std::string out;
    exec(m.body, out);
    return Value::string(std::move(out));
  }

  // ---- expressions ----
  CallArgs eval_args(const Expr& e) {
    CallArgs a;
    for (size_t k = 1; k < e.args.size(); ++k) a.pos.push_back(eval(*e.args[k]));
    for (const auto& [name, x] : e.kwargs) a.kw.emplace_back(name, eval(*x));
    return a;
  }

  Value invoke(const Value& callee, CallArgs& a) {
    if (callee.is_undefined()) fail_undefined(callee);
    if (callee.type != Type::Callable)
      throw RuntimeError("'" + type_name(callee) + "' object is not callable");
    return callee.fn->fn(a);
  }

  Value eval_filter(const Expr& e, const Value* injected) {
    Value operand;
    if (e.args[0]) {
      operand =
          e.args[0]->kind == EK::Filter ? eval_filter(*e.args[0], injected) : eval(*e.args[0]);
    } else if (injected) {
      operand = *injected;
    }
    CallArgs a = eval_args(e);
    return apply_filter(e.name, operand, a);
  }

  static void check_output(const std::string& out) {
    if (out.size() > kMaxOutputBytes)
      throw RuntimeError("the template's output passed its limit of " +
                         std::to_string(kMaxOutputBytes) + " bytes");
  }

  // Every value evaluated: a string's bytes count against the render's budget.
  Value eval(const Expr& e) {
    Value v = eval_node(e);
    if (v.is_string()) charge_bytes(v.s.size());
    return v;
  }

  Value eval_node(const Expr& e) {
    Nest nest(*this);
    switch (e.kind) {
      case EK::Literal:
        return e.literal;
      case EK::Name:
        return lookup(e.name);
      case EK::GetAttr:
        return get_attr(eval(*e.args[0]), e.name);
      case EK::GetItem: {
        Value obj = eval(*e.args[0]);
        const Expr& idx = *e.args[1];
        if (idx.kind == EK::Slice) {
          auto part = [&](size_t k) { return idx.args[k] ? eval(*idx.args[k]) : Value::none(); };
          Value a = part(0), b = part(1), c = part(2);
          return get_slice(obj, a, b, c);
        }
        return get_item(obj, eval(idx));
      }
      case EK::Slice:
        throw RuntimeError("slice outside of a subscript");
      case EK::Call: {
        Value callee = eval(*e.args[0]);
        CallArgs a = eval_args(e);
        return invoke(callee, a);
      }
      case EK::Filter:
        return eval_filter(e, nullptr);
      case EK::Test: {
        Value v = eval(*e.args[0]);
        CallArgs a = eval_args(e);
        return Value::boolean(apply_test(e.name, v, a) != e.negated);
      }
      case EK::Not:
        return Value::boolean(!truthy(eval(*e.args[0])));
      case EK::Neg:
      case EK::Pos:
        return negate(eval(*e.args[0]), e.kind == EK::Neg);
      case EK::Binary: {
        Value l = eval(*e.args[0]);
        if (e.name == "and") return truthy(l) ? eval(*e.args[1]) : l;
        if (e.name == "or") return truthy(l) ? l : eval(*e.args[1]);
        return binary_op(e.name, l, eval(*e.args[1]));
      }
      case EK::Compare: {
        Value l = eval(*e.args[0]);
        for (size_t k = 0; k < e.ops.size(); ++k) {
          Value r = eval(*e.args[k + 1]);
          const std::string& op = e.ops[k];
          bool ok;
          if (op == "==")
            ok = equals(l, r);
          else if (op == "!=")
            ok = !equals(l, r);
          else if (op == "in")
            ok = contains(r, l);
          else if (op == "notin")
            ok = !contains(r, l);
          else {
            int c = compare(l, r, op.c_str());
            ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
          }
          if (!ok) return Value::boolean(false);
          l = std::move(r);
        }
        return Value::boolean(true);
      }
      case EK::Cond:
        if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
        if (e.args[2]) return eval(*e.args[2]);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                " evaluated to false and no else section was defined.");
      case EK::List:
      case EK::Tuple: {
        List items;
        for (const auto& x : e.args) items.push_back(eval(*x));
        return Value::make_list(std::move(items), e.kind == EK::Tuple);
      }
      case EK::Dict: {
        Value d = Value::make_dict();
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          Value key = eval(*e.args[k]);
          if (key.type == Type::List && !key.is_tuple)
            throw RuntimeError("unhashable type: 'list'");
          if (key.type == Type::Dict) throw RuntimeError("unhashable type: 'dict'");
          d.dict->set(key, eval(*e.args[k + 1]));
        }
        return d;
      }
    }
    throw RuntimeError("unknown expression");
  }

  const Value& context_;
  Frame builtins_;
  std::vector<std::shared_ptr<Frame>> frames_;
  int depth_ = 0;
  int nest_ = 0;
  int line_ = 0;
  int64_t steps_ = 0;
};

}  // namespace

std::string render_program(const Body& program, const Value& context) {
  BytesBudget budget(kMaxStringBytes);
  Interp in(context);
  return in.run(program);
}

}  // namespace tessera::jinja
