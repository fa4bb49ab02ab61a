#include "grammar/token_mask.h"

#include <algorithm>
#include <bit>
#include <numeric>

namespace tessera::grammar {

namespace {
// States whose masks are kept (a 262k vocabulary's mask is 32 KiB): past this the cache starts
// over; sequences hold masks by shared_ptr, so clearing never pulls one from under them.
constexpr size_t kMaxMasks = 2048;
}  // namespace

VocabTrie::VocabTrie(std::vector<std::string> bytes) : bytes_(std::move(bytes)) {
  std::vector<int32_t> order;
  for (size_t i = 0; i < bytes_.size(); ++i)
    if (!bytes_[i].empty() && bytes_[i].size() < 65535) order.push_back(static_cast<int32_t>(i));
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return bytes_[a] < bytes_[b] || (bytes_[a] == bytes_[b] && a < b);
  });
  // Sorted strings: each adds nodes for its bytes past the common prefix with the previous one,
  // which is exactly the depth-first order; subtree ends are filled when a node leaves the path.
  std::vector<int32_t> path;  // node index per depth - 1
  const std::string* prev = nullptr;
  for (int32_t id : order) {
    const std::string& s = bytes_[id];
    size_t common = 0;
    if (prev) {
      const size_t lim = std::min(prev->size(), s.size());
      while (common < lim && (*prev)[common] == s[common]) ++common;
    }
    while (path.size() > common) {
      nodes_[path.back()].end = static_cast<int32_t>(nodes_.size());
      path.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back(static_cast<int32_t>(nodes_.size()));
      nodes_.push_back({static_cast<uint8_t>(s[d]), static_cast<uint16_t>(d + 1), 0, 0, 0});
    }
    Node& leaf = nodes_[path.back()];
    if (leaf.tok_end == 0) leaf.tok_begin = leaf.tok_end = static_cast<int32_t>(ids_.size());
    ids_.push_back(id);
    leaf.tok_end = static_cast<int32_t>(ids_.size());
    max_depth_ = std::max(max_depth_, static_cast<int>(s.size()));
    prev = &s;
  }
  while (!path.empty()) {
    nodes_[path.back()].end = static_cast<int32_t>(nodes_.size());
    path.pop_back();
  }
}

TokenGrammar::TokenGrammar(std::shared_ptr<const Grammar> g, std::shared_ptr<const VocabTrie> v)
    : vocab_(std::move(v)), m_(std::move(g)), start_(m_.start()) {}

int32_t TokenGrammar::advance(int32_t state, int32_t id) {
  std::lock_guard<std::mutex> lk(mu_);
  if (state == Matcher::kDead || id < 0 || id >= vocab_->vocab_size()) return Matcher::kDead;
  const std::string& b = vocab_->bytes(id);
  if (b.empty()) return Matcher::kDead;
  return m_.next(state, b);
}

bool TokenGrammar::accepting(int32_t state) {
  std::lock_guard<std::mutex> lk(mu_);
  return state != Matcher::kDead && m_.accepting(state);
}

bool TokenGrammar::can_continue(int32_t state) {
  std::lock_guard<std::mutex> lk(mu_);
  return state != Matcher::kDead && m_.can_continue(state);
}

size_t TokenGrammar::num_states() {
  std::lock_guard<std::mutex> lk(mu_);
  return m_.num_states();
}

std::shared_ptr<const TokenMask> TokenGrammar::mask(int32_t state) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = masks_.find(state);
  if (it != masks_.end()) return it->second;
  if (masks_.size() >= kMaxMasks) masks_.clear();
  auto m = compute_mask(state);
  masks_.emplace(state, m);
  return m;
}

std::shared_ptr<const TokenMask> TokenGrammar::compute_mask(int32_t state) {
  auto mask = std::make_shared<TokenMask>();
  mask->bits.assign((static_cast<size_t>(vocab_->vocab_size()) + 63) / 64, 0);
  const auto& nodes = vocab_->nodes();
  const auto& ids = vocab_->ids();
  walk_.assign(static_cast<size_t>(vocab_->max_depth()) + 1, Matcher::kDead);
  walk_[0] = state;
  const auto n = static_cast<int32_t>(nodes.size());
  for (int32_t i = 0; i < n;) {
    const VocabTrie::Node& node = nodes[i];
    const int32_t s = m_.next(walk_[node.depth - 1], node.byte);
    if (s == Matcher::kDead) {
      i = node.end;  // no token under this prefix can continue the output
      continue;
    }
    walk_[node.depth] = s;
    for (int32_t k = node.tok_begin; k < node.tok_end; ++k)
      mask->bits[static_cast<size_t>(ids[k]) >> 6] |= uint64_t{1} << (ids[k] & 63);
    ++i;
  }
  for (uint64_t w : mask->bits) mask->allowed += std::popcount(w);
  return mask;
}

}  // namespace tessera::grammar
