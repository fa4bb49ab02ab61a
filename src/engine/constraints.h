// Structured output in the engine: a request's OutputConstraint compiled once against the
// model's vocabulary (grammar/token_mask.h) and kept in an LRU, so that requests with the same
// schema share one compiled grammar, its matcher states and their token masks.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/token_mask.h"
#include "tessera/engine.h"

namespace tessera {

class Tokenizer;

// What each token id adds to the output, as bytes: decode() of the token after an anchor token
// minus the anchor's (so a Metaspace decoder's first-token rule does not strip its space),
// <0xNN> byte tokens as their byte; empty for special tokens and ids past the tokenizer's.
std::vector<std::string> vocab_bytes(const Tokenizer& tok, int vocab_size);

class ConstraintCache {
 public:
  // tok may be null (no tokenizer: every constraint is refused).
  ConstraintCache(const Tokenizer* tok, int vocab_size, size_t capacity = 64);
  // The compiled constraint; throws RequestError naming c.field (default "response_format").
  std::shared_ptr<grammar::TokenGrammar> get(const OutputConstraint& c);

 private:
  const grammar::VocabTrie& vocab();

  const Tokenizer* tok_;
  int vocab_size_;
  size_t capacity_;
  std::mutex mu_;
  std::once_flag vocab_once_;
  std::shared_ptr<const grammar::VocabTrie> vocab_;
  std::list<std::pair<std::string, std::shared_ptr<grammar::TokenGrammar>>> lru_;
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
};

}  // namespace tessera
