// A context-free grammar over bytes, as the matcher runs it (docs/GRAMMAR.md). Every source form
// (GBNF, a regex, a JSON schema, a choice list) is parsed into rules of expressions (expr.h) and
// lowered here: character classes become UTF-8 byte sequences, repetitions and groups become
// rules of their own, so a rule is only alternatives of sequences of byte sets and rule
// references (llama.cpp's llama_grammar_element, at the byte level instead of code points).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::grammar {

struct ByteSet {
  uint64_t bits[4] = {0, 0, 0, 0};
  void add(int lo, int hi) {
    for (int b = lo; b <= hi; ++b) bits[b >> 6] |= uint64_t{1} << (b & 63);
  }
  bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  bool operator==(const ByteSet&) const = default;
};

struct Elem {
  enum class Type : uint8_t { end, bytes, ref };
  Type type = Type::end;
  int32_t rule = -1;  // ref: the rule referred to
  ByteSet set;        // bytes: the bytes it matches
};

// Each alternative's elements, then an end element, back to back in `elems`.
struct Grammar {
  std::vector<Elem> elems;
  std::vector<std::vector<int32_t>> alts;  // per rule: where each alternative starts in elems
  std::vector<std::string> names;          // per rule, for messages (generated rules: name#n)
  int32_t root = 0;
  int num_rules() const { return static_cast<int>(alts.size()); }
};

}  // namespace tessera::grammar
