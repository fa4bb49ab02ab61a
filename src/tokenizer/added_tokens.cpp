#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace tessera::tok {

void AddedVocabulary::Trie::add(std::string_view s, int32_t token_index) {
  if (s.empty()) return;
  if (terminal.empty()) terminal.push_back(-1);
  first_byte[static_cast<unsigned char>(s[0])] = true;
  int32_t node = 0;
  for (unsigned char b : s) {
    uint64_t key = (static_cast<uint64_t>(node) << 8) | b;
    auto it = edges.find(key);
    if (it == edges.end()) {
      int32_t child = static_cast<int32_t>(terminal.size());
      terminal.push_back(-1);
      edges.emplace(key, child);
      node = child;
    } else {
      node = it->second;
    }
  }
  // With duplicate contents the first token added wins, as in an Aho-Corasick automaton.
  if (terminal[node] < 0) terminal[node] = token_index;
}

int32_t AddedVocabulary::Trie::longest(std::string_view text, size_t pos, size_t& end) const {
  int32_t node = 0, best = -1;
  for (size_t j = pos; j < text.size(); ++j) {
    auto it = edges.find((static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(text[j]));
    if (it == edges.end()) break;
    node = it->second;
    if (terminal[node] >= 0) {
      best = terminal[node];
      end = j + 1;
    }
  }
  return best;
}

void AddedVocabulary::load(const JNode& list, const Normalizer* normalizer) {
  if (!list.is_array()) list.fail("expected an array");
  std::vector<AddedToken> parsed;
  size_t i = 0;
  for (JElem child : list.e.get_array()) {
    JNode n = list.index(i++, child);
    AddedToken t;
    t.content = std::string(n.str("content"));
    int64_t id = n.at("id").integer();
    if (id < 0 || id > INT32_MAX) n.fail("invalid id " + std::to_string(id));
    t.id = static_cast<int32_t>(id);
    t.special = n.bool_or("special", false);
    t.single_word = n.bool_or("single_word", false);
    t.lstrip = n.bool_or("lstrip", false);
    t.rstrip = n.bool_or("rstrip", false);
    t.normalized = n.bool_or("normalized", !t.special);
    if (find_invalid_utf8(t.content) != std::string_view::npos) n.fail("content is not UTF-8");
    parsed.push_back(std::move(t));
  }
  add(std::move(parsed), normalizer);
}

void AddedVocabulary::add(std::vector<AddedToken> list, const Normalizer* normalizer) {
  for (AddedToken& t : list) {
    if (t.content.empty()) continue;  // HF ignores empty added tokens
    auto it = by_id_.find(t.id);
    if (it != by_id_.end()) {
      tokens_[it->second] = t;  // a later entry for the same id replaces the earlier one
    } else {
      by_id_.emplace(t.id, tokens_.size());
      tokens_.push_back(t);
    }
  }
  for (size_t k = 0; k < tokens_.size(); ++k) {
    const AddedToken& t = tokens_[k];
    by_content_.insert(t.content, t.id);
    if (t.special) special_contents_.insert(t.content, t.id);
    max_id_ = std::max(max_id_, t.id);
  }
  // The matching order of HF's refresh_added_tokens: special tokens, then the others.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t k = 0; k < tokens_.size(); ++k) {
      const AddedToken& t = tokens_[k];
      if (t.special != (pass == 0)) continue;
      if (!t.normalized) {
        raw_trie_.add(t.content, static_cast<int32_t>(k));
      } else {
        std::string norm = t.content;
        if (normalizer) normalizer->normalize(norm);
        normalized_trie_.add(norm, static_cast<int32_t>(k));
      }
    }
  }
}

namespace {

bool ends_with_word(std::string_view s) {
  if (s.empty()) return false;
  size_t i = s.size();
  return is_word_char(prev_cp(s, i));
}

bool starts_with_word(std::string_view s) {
  if (s.empty()) return false;
  size_t i = 0;
  return is_word_char(next_cp(s, i));
}

}  // namespace

// ref: added_vocabulary.rs find_matches.
void AddedVocabulary::split(std::string_view text, bool normalized_tokens,
                            std::vector<Segment>& out) const {
  out.clear();
  const Trie& trie = normalized_tokens ? normalized_trie_ : raw_trie_;
  uint32_t n = static_cast<uint32_t>(text.size());
  if (trie.terminal.empty() || text.empty()) {
    out.push_back(Segment{0, n, -1});
    return;
  }
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (!trie.first_byte[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    size_t mend = 0;
    int32_t k = trie.longest(text, pos, mend);
    if (k < 0) {
      ++pos;
      continue;
    }
    const AddedToken& t = tokens_[k];
    size_t start = pos, stop = mend;
    pos = mend;  // the automaton resumes after the match, whatever is done with it
    if (t.single_word) {
      bool start_ok = start == 0 || !ends_with_word(text.substr(0, start));
      bool stop_ok = stop == text.size() || !starts_with_word(text.substr(stop));
      if (!start_ok || !stop_ok) continue;
    }
    if (t.lstrip) {
      size_t s = start;
      while (s > 0) {
        size_t j = s;
        if (!is_white_space(prev_cp(text, j))) break;
        s = j;
      }
      // Spaces already taken by the previous match stay with it.
      start = std::max(s, start_offset);
    }
    if (t.rstrip) {
      while (stop < text.size()) {
        size_t j = stop;
        if (!is_white_space(next_cp(text, j))) break;
        stop = j;
      }
    }
    if (start_offset < start) {
      out.push_back(Segment{static_cast<uint32_t>(start_offset), static_cast<uint32_t>(start), -1});
    }
    out.push_back(Segment{static_cast<uint32_t>(start), static_cast<uint32_t>(stop), t.id});
    start_offset = stop;
  }
  if (start_offset < text.size()) {
    out.push_back(Segment{static_cast<uint32_t>(start_offset), n, -1});
  }
}

}  // namespace tessera::tok
