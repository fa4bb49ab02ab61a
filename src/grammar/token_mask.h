// Token masks: which vocabulary entries may come next in a grammar's state (docs/GRAMMAR.md).
//
// The vocabulary's byte strings are kept as a trie laid out in depth-first order (each node its
// byte, its depth and where its subtree ends), so the mask for a state is one walk of the
// trie through the matcher: a node whose byte leads to a dead state skips its whole subtree,
// and tokens sharing a prefix share its transitions. Masks are cached per matcher state, since
// outputs revisit the same states (every character of a JSON string, say): after the first
// visit a state's mask costs a lookup.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/matcher.h"

namespace tessera::grammar {

class VocabTrie {
 public:
  // bytes[id]: what token id adds to the output; empty: never allowed by a grammar (special
  // tokens, ids without text).
  explicit VocabTrie(std::vector<std::string> bytes);
  int vocab_size() const { return static_cast<int>(bytes_.size()); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }

  struct Node {
    uint8_t byte;
    uint16_t depth;     // 1 for a child of the root
    int32_t end;        // index after this node's subtree
    int32_t tok_begin;  // tokens ending here: ids_[tok_begin, tok_end)
    int32_t tok_end;
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& ids() const { return ids_; }
  int max_depth() const { return max_depth_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<Node> nodes_;
  std::vector<int32_t> ids_;
  int max_depth_ = 0;
};

struct TokenMask {
  std::vector<uint64_t> bits;  // bit id: token id may come next
  int allowed = 0;             // how many bits are set
  bool allows(int32_t id) const { return (bits[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }
};

// One grammar against one vocabulary: a matcher, its state masks, shared by every sequence
// that uses the grammar (a sequence's own state is a matcher state id). Safe to call from
// several threads: the scheduler calls it, tests call it directly.
class TokenGrammar {
 public:
  TokenGrammar(std::shared_ptr<const Grammar> g, std::shared_ptr<const VocabTrie> vocab);
  int32_t start() const { return start_; }
  // The state after token id, Matcher::kDead when the grammar does not allow it.
  int32_t advance(int32_t state, int32_t id);
  // The tokens that may follow in `state` (EOS is the caller's: allowed when accepting()).
  std::shared_ptr<const TokenMask> mask(int32_t state);
  bool accepting(int32_t state);
  bool can_continue(int32_t state);
  const VocabTrie& vocab() const { return *vocab_; }
  // Matcher states made so far (each holds a 1 KiB transition table): the engine's cache starts
  // a grammar afresh past a bound, since states accumulate over every output that used it.
  size_t num_states();

 private:
  std::shared_ptr<const TokenMask> compute_mask(int32_t state);

  std::mutex mu_;
  std::shared_ptr<const VocabTrie> vocab_;
  Matcher m_;
  int32_t start_;
  std::unordered_map<int32_t, std::shared_ptr<const TokenMask>> masks_;
  std::vector<int32_t> walk_;  // per trie depth: the state there
};

}  // namespace tessera::grammar
