// The grammar's matcher: a pushdown automaton over bytes, determinized lazily (docs/GRAMMAR.md).
//
// A parse position is a stack of grammar positions (llama.cpp's llama_grammar_stack), whose top
// is always a byte set, or the empty stack once the root rule is complete. Stacks are
// hash-consed as linked nodes (position, parent), so a stack is one id and pushing or popping
// copies nothing; a matcher state is the set of stacks the bytes so far allow, interned as one id.
// Its transitions on each byte are computed on first use and kept in a dense table, so walking a
// token's bytes (and the vocabulary trie, token_mask.h) costs one table lookup per byte once the
// states it visits are known.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace tessera::grammar {

class Matcher {
 public:
  static constexpr int32_t kDead = -1;

  explicit Matcher(std::shared_ptr<const Grammar> g);  // may throw as next() does
  int32_t start() const { return start_; }
  // The state after byte b, or kDead when b cannot continue a valid output. Throws
  // Error(invalid_argument) when the grammar proves too ambiguous to match (matcher.cpp's bounds).
  int32_t next(int32_t state, uint8_t b) {
    const size_t at = static_cast<size_t>(state) * 256 + b;
    if (trans_[at] == kUnknown) {
      const int32_t t = compute(state, b);  // may grow trans_
      trans_[at] = t;
    }
    return trans_[at];
  }
  int32_t next(int32_t state, std::string_view bytes) {
    for (char c : bytes) {
      if (state == kDead) break;
      state = next(state, static_cast<uint8_t>(c));
    }
    return state;
  }
  // The output so far is a complete match of the root rule.
  bool accepting(int32_t state) const { return states_[state].accepting; }
  // Some byte can follow (false: the output is complete and nothing may be added).
  bool can_continue(int32_t state) const { return states_[state].can_continue; }
  size_t num_states() const { return states_.size(); }
  const Grammar& grammar() const { return *g_; }

 private:
  static constexpr int32_t kUnknown = -2;
  struct Node {
    int32_t pos, parent;  // grammar position (an index into elems) and the stack below
  };
  struct State {
    std::vector<int32_t> stacks;  // sorted stack ids (0: the empty stack)
    bool accepting = false, can_continue = false;
  };
  struct VecHash {
    size_t operator()(const std::vector<int32_t>& v) const {
      uint64_t h = 1469598103934665603ull;
      for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
      return static_cast<size_t>(h);
    }
  };

  int32_t push(int32_t pos, int32_t parent);
  // The stacks whose top is a byte set (or the empty stack) that stack s stands for.
  const std::vector<int32_t>& closure(int32_t s);
  void expand(int32_t s, std::vector<int32_t>& out);
  int32_t intern(std::vector<int32_t> stacks);
  int32_t compute(int32_t state, uint8_t b);

  std::shared_ptr<const Grammar> g_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  std::vector<std::vector<int32_t>> closures_;
  std::vector<char> closed_;
  std::vector<State> states_;
  std::unordered_map<std::vector<int32_t>, int32_t, VecHash> state_ids_;
  std::vector<int32_t> trans_;  // [state * 256 + byte]
  std::vector<int32_t> scratch_;
  int32_t start_ = kDead;
};

}  // namespace tessera::grammar
