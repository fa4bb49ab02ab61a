// tokenizer.json "added_tokens": tokens matched in the text before anything else (special tokens
// such as <bos> or <|im_start|>, and others such as Gemma's <unusedN>), with their lstrip,
// rstrip, single_word and normalized options. ref: tokenizers tokenizer/added_vocabulary.rs.
//
// Matching is leftmost-longest (HF builds an Aho-Corasick automaton with MatchKind::
// LeftmostLongest): at the first position where some token matches, the longest one wins, and
// the scan resumes after it. Tokens with normalized=false are matched in the raw text; those with
// normalized=true in the normalized text of the pieces between the former.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/hash_map.h"
#include "tokenizer/json_util.h"

namespace tessera::tok {

class Normalizer;

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false, single_word = false, lstrip = false, rstrip = false, normalized = true;
};

class AddedVocabulary {
 public:
  // A piece of the text: [begin, end) bytes, and the added token's id or -1 for plain text.
  struct Segment {
    uint32_t begin, end;
    int32_t id;
  };

  // `normalizer` (may be null) normalizes the content of normalized=true tokens.
  void load(const JNode& added_tokens, const Normalizer* normalizer);
  // The same from parts (valid UTF-8 contents); called once, on an empty vocabulary.
  void add(std::vector<AddedToken> tokens, const Normalizer* normalizer);

  // Splits `text` on the raw (normalized=false) or the normalized tokens. Every byte of `text`
  // is in some segment; plain segments may be empty.
  void split(std::string_view text, bool normalized_tokens, std::vector<Segment>& out) const;
  bool has_normalized_tokens() const { return !normalized_trie_.terminal.empty(); }

  const AddedToken* by_id(int32_t id) const {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &tokens_[it->second];
  }
  int32_t find(std::string_view content) const { return by_content_.find(content); }
  bool is_special_content(std::string_view content) const {
    return special_contents_.find(content) >= 0;
  }
  int32_t max_id() const { return max_id_; }
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // A byte trie of the token contents; node 0 is the root.
  struct Trie {
    std::unordered_map<uint64_t, int32_t> edges;  // (node << 8 | byte) -> child
    std::vector<int32_t> terminal;                // node -> token index or -1
    bool first_byte[256] = {};
    void add(std::string_view s, int32_t token_index);
    // The longest token starting at text[pos]: sets `end` and returns its index, or -1.
    int32_t longest(std::string_view text, size_t pos, size_t& end) const;
  };

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;  // id -> index in tokens_
  StringIdMap by_content_;
  StringIdMap special_contents_;
  Trie raw_trie_, normalized_trie_;
  int32_t max_id_ = -1;
};

}  // namespace tessera::tok
