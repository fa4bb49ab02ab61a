#include "engine/constraints.h"

#include "grammar/compile.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

namespace {

bool byte_token(const std::string& t, uint8_t& b) {
  auto hex = [](char c) -> int {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return false;
  const int h = hex(t[3]), l = hex(t[4]);
  if (h < 0 || l < 0) return false;
  b = static_cast<uint8_t>(h * 16 + l);
  return true;
}

// Matcher states a cached grammar may reach (about 1 KiB each) before it is compiled afresh.
constexpr size_t kMaxStates = 100000;

std::string key_of(const OutputConstraint& c) {
  std::string k = std::to_string(static_cast<int>(c.kind)) + '\0' + c.text;
  for (const std::string& s : c.choices) k += '\0' + s;
  k += '\1' + c.prefix + '\1' + c.suffix + '\1' + c.separator + '\1' + std::to_string(c.max_count);
  return k;
}

}  // namespace

std::vector<std::string> vocab_bytes(const Tokenizer& tok, int vocab_size) {
  std::vector<std::string> out(static_cast<size_t>(vocab_size));
  const int n = std::min(vocab_size, tok.vocab_size());
  // An anchor: a plain token that decodes to itself (vLLM and outlines decode a token after a
  // prefix for the same reason).
  std::optional<int32_t> anchor = tok.token_to_id("a");
  std::string anchor_text;
  if (anchor) {
    const int32_t one[1] = {*anchor};
    anchor_text = tok.decode(one, false);
  }
  for (int32_t id = 0; id < n; ++id) {
    if (tok.is_special(id)) continue;
    const std::string t = tok.id_to_token(id);
    if (t.empty()) continue;
    uint8_t b;
    if (byte_token(t, b)) {
      out[id] = std::string(1, static_cast<char>(b));
      continue;
    }
    if (anchor && !anchor_text.empty()) {
      const int32_t two[2] = {*anchor, id};
      std::string s = tok.decode(two, false);
      if (s.compare(0, anchor_text.size(), anchor_text) == 0) {
        out[id] = s.substr(anchor_text.size());
        continue;
      }
    }
    const int32_t one[1] = {id};
    out[id] = tok.decode(one, false);
  }
  return out;
}

ConstraintCache::ConstraintCache(const Tokenizer* tok, int vocab_size, size_t capacity)
    : tok_(tok), vocab_size_(vocab_size), capacity_(capacity) {}

const grammar::VocabTrie& ConstraintCache::vocab() {
  std::call_once(vocab_once_, [&] {
    vocab_ = std::make_shared<const grammar::VocabTrie>(vocab_bytes(*tok_, vocab_size_));
  });
  return *vocab_;
}

std::shared_ptr<grammar::TokenGrammar> ConstraintCache::get(const OutputConstraint& c) {
  const std::string field = c.field.empty() ? "response_format" : c.field;
  if (!tok_)
    throw RequestError(field, "structured output needs the model's tokenizer (tokenizer.json)");
  vocab();
  const std::string key = key_of(c);
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = index_.find(key);
    if (it != index_.end() && it->second->second->num_states() > kMaxStates) {
      // Grown large over many outputs: new requests start afresh (the sequences using the old
      // one keep it until they end).
      lru_.erase(it->second);
      index_.erase(it);
    } else if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  std::shared_ptr<grammar::TokenGrammar> tg;
  try {
    tg = std::make_shared<grammar::TokenGrammar>(grammar::compile(c), vocab_);
    // A grammar that cannot start with any token of this vocabulary is the request's error.
    if (tg->mask(tg->start())->allowed == 0 && !tg->accepting(tg->start()))
      throw RequestError(field,
                         "no token of this model's vocabulary can start the constrained output");
  } catch (const RequestError&) {
    throw;
  } catch (const Error& e) {  // the compiler's message, or a grammar too ambiguous to match
    throw RequestError(field, e.what());
  }
  std::lock_guard<std::mutex> lk(mu_);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second->second;
  lru_.emplace_front(key, tg);
  index_[key] = lru_.begin();
  if (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return tg;
}

}  // namespace tessera
