#include "grammar/matcher.h"

#include <algorithm>

#include "core/check.h"

namespace tessera::grammar {

namespace {
constexpr size_t kMaxStacksPerState = 4096;
constexpr size_t kMaxNodes = 2000000;

// Ambiguous grammars (a nullable x in x{0,n}, say) make stack sets grow with n^2; past these
// bounds the grammar is refused rather than left to take seconds per byte.
[[noreturn]] void too_ambiguous() {
  fail_arg("the grammar is too ambiguous to match efficiently (over " +
           std::to_string(kMaxStacksPerState) + " parse stacks at one position, or " +
           std::to_string(kMaxNodes) + " stack nodes); simplify its repetitions of optional parts");
}
}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {
  nodes_.push_back({-1, -1});  // stack 0: empty
  closures_.emplace_back();
  closed_.push_back(0);
  // The start: every alternative of the root on an empty stack.
  std::vector<int32_t> init;
  for (int32_t a : g_->alts[g_->root]) {
    if (g_->elems[a].type == Elem::Type::end) {
      init.push_back(0);
    } else {
      const auto& c = closure(push(a, 0));
      init.insert(init.end(), c.begin(), c.end());
    }
  }
  start_ = intern(std::move(init));
}

int32_t Matcher::push(int32_t pos, int32_t parent) {
  const uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
  auto [it, fresh] = node_ids_.try_emplace(key, static_cast<int32_t>(nodes_.size()));
  if (fresh) {
    nodes_.push_back({pos, parent});
    closures_.emplace_back();
    closed_.push_back(0);
  }
  return it->second;
}

// llama_grammar_advance_stack: a reference at the top is replaced by each alternative of its rule
// (the reference's continuation pushed beneath, unless the reference ends its alternative: a tail
// call keeps the stack flat), until every top is a byte set. Left recursion cannot loop here:
// lower() refuses it.
void Matcher::expand(int32_t s, std::vector<int32_t>& out) {
  if (s == 0) {
    out.push_back(0);
    return;
  }
  const Node n = nodes_[s];
  const Elem& e = g_->elems[n.pos];
  if (e.type == Elem::Type::bytes) {
    out.push_back(s);
    return;
  }
  TS_ASSERT(e.type == Elem::Type::ref);
  int32_t base = n.parent;
  if (g_->elems[n.pos + 1].type != Elem::Type::end) base = push(n.pos + 1, base);
  for (int32_t a : g_->alts[e.rule]) {
    const int32_t t = g_->elems[a].type == Elem::Type::end ? base : push(a, base);
    const auto& c = closure(t);  // memoized: nested optionals share their tails
    out.insert(out.end(), c.begin(), c.end());
    if (out.size() > kMaxStacksPerState) too_ambiguous();
  }
}

const std::vector<int32_t>& Matcher::closure(int32_t s) {
  if (!closed_[s]) {
    std::vector<int32_t> out;
    expand(s, out);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    closures_[s] = std::move(out);
    closed_[s] = 1;
  }
  return closures_[s];
}

int32_t Matcher::intern(std::vector<int32_t> stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  if (stacks.empty()) return kDead;
  if (stacks.size() > kMaxStacksPerState || nodes_.size() > kMaxNodes) too_ambiguous();
  auto it = state_ids_.find(stacks);
  if (it != state_ids_.end()) return it->second;
  const auto id = static_cast<int32_t>(states_.size());
  State st;
  st.accepting = stacks.front() == 0;
  st.can_continue = stacks.back() != 0;
  st.stacks = stacks;
  states_.push_back(std::move(st));
  state_ids_.emplace(std::move(stacks), id);
  trans_.resize(states_.size() * 256, kUnknown);
  return id;
}

// llama_grammar_accept: each stack whose top byte set holds b pops it and advances past it.
int32_t Matcher::compute(int32_t state, uint8_t b) {
  scratch_.clear();
  // states_ may grow below: copy the stacks first.
  const std::vector<int32_t> stacks = states_[state].stacks;
  for (int32_t s : stacks) {
    if (s == 0) continue;
    const Node n = nodes_[s];
    if (!g_->elems[n.pos].set.has(b)) continue;
    int32_t rest = n.parent;
    if (g_->elems[n.pos + 1].type != Elem::Type::end) rest = push(n.pos + 1, rest);
    const auto& c = closure(rest);
    scratch_.insert(scratch_.end(), c.begin(), c.end());
  }
  return intern(scratch_);
}

}  // namespace tessera::grammar
