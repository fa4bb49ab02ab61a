#include "tokenizer/bpe.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>

#include "core/check.h"
#include "tokenizer/utf8.h"

namespace tessera::tok {

BpeModel::~BpeModel() = default;

std::unique_ptr<BpeModel> BpeModel::from_json(const JNode& model) {
  std::unique_ptr<BpeModel> m(new BpeModel());
  if (auto d = model.get("dropout")) {
    if (d->number() > 0) model.unsupported("BPE dropout");
  }
  if (auto p = model.get("continuing_subword_prefix")) m->prefix_ = std::string(p->str());
  if (auto s = model.get("end_of_word_suffix")) m->suffix_ = std::string(s->str());
  if (auto u = model.get("unk_token")) {
    m->has_unk_ = true;
    m->unk_token_ = std::string(u->str());
  }
  m->fuse_unk_ = model.bool_or("fuse_unk", false);
  m->byte_fallback_ = model.bool_or("byte_fallback", false);
  m->ignore_merges_ = model.bool_or("ignore_merges", false);

  m->load_vocab(model.at("vocab"));
  m->load_merges(model.at("merges"));
  m->finish();
  return m;
}

std::unique_ptr<BpeModel> BpeModel::from_tokens(const std::vector<std::string_view>& tokens,
                                                const Options& o) {
  std::unique_ptr<BpeModel> m(new BpeModel());
  if (!o.unk_token.empty()) {
    m->has_unk_ = true;
    m->unk_token_ = o.unk_token;
  }
  m->fuse_unk_ = o.fuse_unk;
  m->byte_fallback_ = o.byte_fallback;
  m->ignore_merges_ = o.ignore_merges;
  std::vector<int32_t> ids(tokens.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  m->build_vocab(tokens, ids);
  m->finish();
  return m;
}

void BpeModel::finish() {
  split_long_words_ = prefix_.empty() && suffix_.empty();
  if (has_unk_) unk_id_ = vocab_.find(unk_token_);
  all_bytes_ = true;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_ids_[b] = vocab_.find(name);
    if (byte_ids_[b] < 0) all_bytes_ = false;
  }
  cache_ = std::make_unique<CacheShard[]>(kCacheShards);
}

void BpeModel::load_vocab(const JNode& vocab) {
  if (!vocab.is_object()) vocab.fail("expected an object of token -> id");
  simdjson::dom::object obj = vocab.e.get_object();
  std::vector<std::string_view> keys;
  std::vector<int32_t> ids;
  keys.reserve(obj.size());
  ids.reserve(obj.size());
  for (auto kv : obj) {
    int64_t id;
    if (kv.value.get_int64().get(id) != simdjson::SUCCESS || id < 0 || id > INT32_MAX) {
      vocab.fail("token \"" + std::string(kv.key) + "\" has no valid id");
    }
    // Ids index tables (build_vocab): one far past the vocabulary's size would size them at
    // gigabytes and end in a bare std::bad_alloc (issue #29). Real vocabularies are dense; this
    // leaves room for holes.
    if (static_cast<uint64_t>(id) >= 2 * obj.size() + 65536)
      vocab.fail("token \"" + std::string(kv.key) + "\" has id " + std::to_string(id) +
                 ", far past the vocabulary's " + std::to_string(obj.size()) + " tokens");
    keys.push_back(kv.key);
    ids.push_back(static_cast<int32_t>(id));
  }
  build_vocab(keys, ids);
}

void BpeModel::build_vocab(const std::vector<std::string_view>& keys,
                           const std::vector<int32_t>& ids) {
  size_t key_bytes = 0;
  int64_t max_id = -1;
  for (size_t i = 0; i < keys.size(); ++i) {
    key_bytes += keys[i].size();
    max_id = std::max<int64_t>(max_id, ids[i]);
  }
  std::vector<uint64_t> hashes(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) hashes[i] = hash_bytes(keys[i].data(), keys[i].size());
  vocab_.reserve(keys.size(), key_bytes);
  // Insert in file order (a duplicate key keeps its last id, as serde's map does), prefetching
  // the slots a few inserts ahead.
  constexpr size_t kAhead = 16;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i + kAhead < keys.size()) vocab_.prefetch(hashes[i + kAhead]);
    vocab_.insert_hashed(keys[i], hashes[i], ids[i]);
  }
  id_to_token_.assign(static_cast<size_t>(max_id + 1), std::string_view());
  has_id_.assign(static_cast<size_t>(max_id + 1), 0);
  bmp_char_id_.assign(0x10000, -1);
  vocab_.for_each([&](std::string_view key, int32_t id) {
    id_to_token_[id] = key;
    has_id_[id] = 1;
    if (!key.empty()) {
      size_t i = 0;
      char32_t c = next_cp(key, i);
      if (i == key.size() && c < 0x10000) bmp_char_id_[c] = id;
    }
  });
}

// Merges [begin, end) of the array as ids (left, right, merged), in order. Batches let the
// vocabulary lookups (a, b and a+b for each merge) be prefetched together: one by one, their
// cache misses dominate Gemma 3's load time.
void BpeModel::resolve_merges(const JNode& merges, size_t begin, size_t end,
                              std::vector<ResolvedMerge>& out) const {
  simdjson::dom::array arr = merges.e.get_array();
  constexpr size_t kBatch = 512;
  std::string_view left[kBatch], right[kBatch], keys[3 * kBatch];
  size_t where[kBatch], joined_end[kBatch];
  int32_t ids[3 * kBatch];
  uint64_t hashes[3 * kBatch];
  std::string joined;
  size_t m = 0;
  auto bad = [&](size_t index, const std::string& why) {
    merges.fail("merge " + std::to_string(index) + ": " + why);
  };
  auto flush = [&]() {
    // ref: models/bpe/model.rs build(): the merged token is a + b without b's subword prefix.
    joined.clear();
    for (size_t i = 0; i < m; ++i) {
      joined.append(left[i]);
      joined.append(right[i].substr(std::min(prefix_.size(), right[i].size())));
      joined_end[i] = joined.size();
    }
    for (size_t i = 0; i < m; ++i) {
      size_t from = i ? joined_end[i - 1] : 0;
      keys[3 * i] = left[i];
      keys[3 * i + 1] = right[i];
      keys[3 * i + 2] = std::string_view(joined).substr(from, joined_end[i] - from);
    }
    // Software pipeline: the slot of key j + kAhead is prefetched while key j is looked up, so
    // that many cache misses are in flight at once.
    constexpr size_t kAhead = 48;
    size_t n = 3 * m;
    for (size_t j = 0; j < n; ++j) hashes[j] = hash_bytes(keys[j].data(), keys[j].size());
    for (size_t j = 0; j < n + kAhead; ++j) {
      if (j < n) vocab_.prefetch(hashes[j]);
      if (j >= kAhead) ids[j - kAhead] = vocab_.find_hashed(keys[j - kAhead], hashes[j - kAhead]);
    }
    for (size_t i = 0; i < m; ++i) {
      for (int k = 0; k < 3; ++k) {
        if (ids[3 * i + k] < 0) {
          bad(where[i], std::string(k == 2 ? "merged token \"" : "token \"") +
                            std::string(keys[3 * i + k]) + "\" is not in the vocabulary");
        }
      }
      out.push_back(ResolvedMerge{ids[3 * i], ids[3 * i + 1], ids[3 * i + 2]});
    }
    m = 0;
  };
  auto it = arr.begin();
  for (size_t i = 0; i < begin; ++i) ++it;
  for (size_t index = begin; index < end; ++index, ++it) {
    JElem item = *it;
    std::string_view a, b;
    if (item.is_string()) {
      std::string_view line = item.get_string().value_unsafe();
      if (line.substr(0, 8) == "#version") continue;  // a merges.txt header line; not a merge
      size_t sp = line.find(' ');
      if (sp == std::string_view::npos || line.find(' ', sp + 1) != std::string_view::npos) {
        std::string why(1, '"');  // (built up: GCC 12 warns falsely on "lit" + std::string)
        why.append(line).append("\" is not two tokens separated by one space");
        bad(index, why);
      }
      a = line.substr(0, sp);
      b = line.substr(sp + 1);
    } else if (item.is_array()) {
      simdjson::dom::array pair = item.get_array().value_unsafe();
      auto p = pair.begin();
      bool ok = p != pair.end() && (*p).is_string();
      if (ok) a = (*p).get_string().value_unsafe();
      if (ok) ++p;
      ok = ok && p != pair.end() && (*p).is_string();
      if (ok) b = (*p).get_string().value_unsafe();
      if (ok) ++p;
      if (!ok || p != pair.end()) bad(index, "expected a pair of token strings");
    } else {
      bad(index, "expected \"a b\" or [\"a\", \"b\"]");
    }
    left[m] = a;
    right[m] = b;
    where[m] = index;
    if (++m == kBatch) flush();
  }
  flush();
}

void BpeModel::load_merges(const JNode& merges) {
  if (!merges.is_array()) merges.fail("expected an array");
  simdjson::dom::array arr = merges.e.get_array();
  size_t n = arr.size();
  if (n >= 0xFFFFFF) {  // simdjson's stored count saturates there: count them
    n = 0;
    for (auto it = arr.begin(); it != arr.end(); ++it) ++n;
  }
  merges_.reserve(n);
  // Large merge lists are resolved by two threads (the lookups only read the vocabulary); the
  // merge table is then filled in rank order, where a later duplicate pair wins as in HF's map.
  std::vector<ResolvedMerge> first, second;
  first.reserve(n);
  size_t split = n >= 100000 ? n / 2 : n;
  std::exception_ptr second_error;
  std::thread helper;
  if (split < n) {
    second.reserve(n - split);
    helper = std::thread([&] {
      try {
        resolve_merges(merges, split, n, second);
      } catch (...) {
        second_error = std::current_exception();
      }
    });
  }
  try {
    resolve_merges(merges, 0, split, first);
  } catch (...) {
    if (helper.joinable()) helper.join();
    throw;
  }
  add_merges(first);  // while the helper may still be resolving the second half
  if (helper.joinable()) helper.join();
  if (second_error) std::rethrow_exception(second_error);
  add_merges(second);
}

void BpeModel::add_merges(const std::vector<Merge>& v) {
  if (merges_.size() == 0) merges_.reserve(v.size());
  constexpr size_t kAhead = 64;  // prefetch distance into the 16 MB table
  for (size_t i = 0; i < v.size() + kAhead; ++i) {
    if (i < v.size()) merges_.prefetch(v[i].left, v[i].right);
    if (i >= kAhead) {
      const Merge& r = v[i - kAhead];
      merges_.insert(r.left, r.right, PairMap::Value{next_rank_++, r.merged});
    }
  }
}

void BpeModel::build_adjacent_pairs() const {
  for (std::string_view t : id_to_token_) {
    if (t.size() < 2) continue;
    size_t i = 0;
    char32_t prev = next_cp(t, i);
    while (i < t.size()) {
      char32_t c = next_cp(t, i);
      adjacent_.insert(prev, c);
      prev = c;
    }
  }
}

// The id of one character of a word, with the subword prefix / end-of-word suffix that HF adds,
// or -1.
int32_t BpeModel::char_id(std::string_view ch, bool first, bool last) const {
  bool with_prefix = !first && !prefix_.empty();
  bool with_suffix = last && !suffix_.empty();
  if (!with_prefix && !with_suffix) {
    size_t i = 0;
    char32_t c = next_cp(ch, i);
    if (c < 0x10000) return bmp_char_id_[c];
    return vocab_.find(ch);
  }
  std::string s;
  if (with_prefix) s += prefix_;
  s += ch;
  if (with_suffix) s += suffix_;
  return vocab_.find(s);
}

namespace {

struct Symbol {
  int32_t id;
  int32_t prev, next;
  uint32_t len;  // bytes; 0 once merged into its left neighbour
};

// A queued merge: key = rank << 32 | position, so that the smallest key is the merge HF's
// BinaryHeap pops first (lowest rank, then leftmost).
struct QueueItem {
  uint64_t key;
  int32_t new_id;
};

// A 4-ary min-heap: half the depth of a binary heap, and the four children share a cache line.
class MergeQueue {
 public:
  void clear() { v_.clear(); }
  bool empty() const { return v_.empty(); }
  void push_unordered(QueueItem x) { v_.push_back(x); }
  void heapify() {
    if (v_.size() < 2) return;
    for (size_t i = (v_.size() - 2) / 4 + 1; i-- > 0;) sift_down(i);
  }
  void push(QueueItem x) {
    size_t i = v_.size();
    v_.push_back(x);
    while (i > 0) {
      size_t parent = (i - 1) / 4;
      if (v_[parent].key <= x.key) break;
      v_[i] = v_[parent];
      i = parent;
    }
    v_[i] = x;
  }
  QueueItem pop() {
    QueueItem top = v_[0];
    QueueItem last = v_.back();
    v_.pop_back();
    if (!v_.empty()) {
      v_[0] = last;
      sift_down(0);
    }
    return top;
  }

 private:
  void sift_down(size_t i) {
    QueueItem x = v_[i];
    size_t n = v_.size();
    for (;;) {
      size_t c = 4 * i + 1;
      if (c >= n) break;
      size_t best = c;
      size_t end = c + 4 < n ? c + 4 : n;
      for (size_t k = c + 1; k < end; ++k) {
        if (v_[k].key < v_[best].key) best = k;
      }
      if (v_[best].key >= x.key) break;
      v_[i] = v_[best];
      i = best;
    }
    v_[i] = x;
  }
  std::vector<QueueItem> v_;
};

}  // namespace

// ref: models/bpe/model.rs merge_word and word.rs Word::merge_all (without dropout).
void BpeModel::merge_word(std::string_view w, std::vector<int32_t>& out) const {
  thread_local std::vector<Symbol> syms;
  thread_local MergeQueue queue;
  syms.clear();
  queue.clear();
  auto add = [&](int32_t id, uint32_t len) {
    int32_t n = static_cast<int32_t>(syms.size());
    if (n > 0) syms.back().next = n;
    syms.push_back(Symbol{id, n - 1, -1, len});
  };

  bool unk_pending = false;
  int32_t unk_pending_id = -1;
  uint32_t unk_len = 0;
  auto need_unk_id = [&]() {
    if (unk_id_ < 0) {
      fail_model("the BPE unk_token \"" + unk_token_ + "\" is not in the vocabulary");
    }
    return unk_id_;
  };
  for (size_t i = 0; i < w.size();) {
    size_t start = i;
    i += utf8_len(static_cast<unsigned char>(w[i]));
    if (i > w.size()) i = w.size();
    std::string_view ch = w.substr(start, i - start);
    bool first = start == 0, last = i == w.size();
    int32_t id = char_id(ch, first, last);
    if (id >= 0) {
      if (unk_pending) {
        add(unk_pending_id, unk_len);
        unk_pending = false;
      }
      add(id, static_cast<uint32_t>(ch.size()));
      continue;
    }
    if (byte_fallback_) {
      // The bytes of the character as looked up (with prefix / suffix), each as <0xNN>.
      std::string s;
      if (!first && !prefix_.empty()) s += prefix_;
      s += ch;
      if (last && !suffix_.empty()) s += suffix_;
      bool ok = all_bytes_;
      if (!ok) {
        ok = true;
        for (unsigned char b : s) ok = ok && byte_ids_[b] >= 0;
      }
      if (ok) {
        for (unsigned char b : s) add(byte_ids_[b], 1);
        continue;
      }
    }
    if (has_unk_) {
      if (unk_pending && fuse_unk_) {
        unk_len += static_cast<uint32_t>(ch.size());
      } else {
        if (unk_pending) add(unk_pending_id, unk_len);
        unk_pending = true;
        unk_pending_id = need_unk_id();
        unk_len = static_cast<uint32_t>(ch.size());
      }
    }
  }
  if (unk_pending) add(unk_pending_id, unk_len);

  auto key = [](uint32_t rank, size_t pos) { return (uint64_t(rank) << 32) | uint64_t(pos); };
  for (size_t p = 0; p + 1 < syms.size(); ++p) {
    if (const PairMap::Value* m = merges_.find(syms[p].id, syms[p + 1].id)) {
      queue.push_unordered(QueueItem{key(m->rank, p), m->id});
    }
  }
  queue.heapify();
  while (!queue.empty()) {
    QueueItem top = queue.pop();
    const uint32_t pos = static_cast<uint32_t>(top.key);
    Symbol& cur = syms[pos];
    if (cur.len == 0 || cur.next < 0) continue;
    int32_t next_pos = cur.next;
    Symbol right = syms[next_pos];
    // An outdated entry: the pair at this position changed since it was queued.
    const PairMap::Value* m = merges_.find(cur.id, right.id);
    if (!m || m->id != top.new_id) continue;
    cur.id = top.new_id;
    cur.len += right.len;
    cur.next = right.next;
    syms[next_pos].len = 0;
    if (right.next >= 0) syms[right.next].prev = static_cast<int32_t>(pos);
    if (cur.prev >= 0) {
      if (const PairMap::Value* pm = merges_.find(syms[cur.prev].id, cur.id)) {
        queue.push(QueueItem{key(pm->rank, cur.prev), pm->id});
      }
    }
    if (cur.next >= 0) {
      if (const PairMap::Value* nm = merges_.find(cur.id, syms[cur.next].id)) {
        queue.push(QueueItem{key(nm->rank, pos), nm->id});
      }
    }
  }
  for (const Symbol& s : syms) {
    if (s.len != 0) out.push_back(s.id);
  }
}

void BpeModel::merge_cached(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() >= kCacheMaxLen) {
    merge_word(word, out);
    return;
  }
  CacheShard& shard = cache_[hash_bytes(word.data(), word.size()) % kCacheShards];
  {
    std::unique_lock<std::mutex> lock(shard.mu, std::try_to_lock);
    if (lock.owns_lock()) {
      auto it = shard.map.find(word);
      if (it != shard.map.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
  }
  size_t mark = out.size();
  merge_word(word, out);
  std::unique_lock<std::mutex> lock(shard.mu, std::try_to_lock);
  if (lock.owns_lock() && shard.map.size() < kCacheCapacity / kCacheShards) {
    shard.map.emplace(std::string(word), std::vector<int32_t>(out.begin() + mark, out.end()));
  }
}

// ref: models/bpe/model.rs tokenize_with_cache.
namespace {

// A per-thread, direct-mapped cache of short words in front of the vocabulary and the shared
// word cache: hot words then cost one L2 access instead of two hash-table misses and a lock.
// Entries carry the model's generation so that a model freed and another allocated at the same
// address never sees the old entries.
struct FrontEntry {
  uint64_t hash;
  uint32_t generation;  // 0: empty
  uint8_t len, n_ids;
  char key[22];
  int32_t ids[6];
};
static_assert(sizeof(FrontEntry) == 64);
constexpr size_t kFrontEntries = 4096;  // 256 KB per thread

std::atomic<uint32_t> next_generation{1};

FrontEntry* front_table() {
  thread_local std::unique_ptr<FrontEntry[]> table(new FrontEntry[kFrontEntries]());
  return table.get();
}

}  // namespace

BpeModel::BpeModel() : generation_(next_generation.fetch_add(1)) {}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (word.size() <= sizeof(FrontEntry::key)) {
    uint64_t h = hash_bytes(word.data(), word.size());
    FrontEntry& e = front_table()[h & (kFrontEntries - 1)];
    if (e.generation == generation_ && e.hash == h && e.len == word.size() &&
        std::memcmp(e.key, word.data(), word.size()) == 0) {
      out.insert(out.end(), e.ids, e.ids + e.n_ids);
      return;
    }
    size_t mark = out.size();
    tokenize_uncached(word, out);
    size_t n = out.size() - mark;
    if (n <= sizeof(e.ids) / sizeof(e.ids[0])) {
      e.hash = h;
      e.generation = generation_;
      e.len = static_cast<uint8_t>(word.size());
      e.n_ids = static_cast<uint8_t>(n);
      std::memcpy(e.key, word.data(), word.size());
      std::copy(out.begin() + mark, out.end(), e.ids);
    }
    return;
  }
  tokenize_uncached(word, out);
}

void BpeModel::tokenize_uncached(std::string_view word, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    int32_t id = vocab_.find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  if (word.size() < kCacheMaxLen || !split_long_words_) {
    merge_cached(word, out);
    return;
  }
  // A long word: cut it where no merge can cross (see adjacent_) and merge the pieces. The
  // adjacency set is built on the first long word (~20-40 ms), not at load.
  std::call_once(adjacent_once_, [this] { build_adjacent_pairs(); });
  size_t piece = 0, i = 0;
  char32_t prev = next_cp(word, i);
  bool prev_single = prev < 0x10000 && bmp_char_id_[prev] >= 0;
  while (i < word.size()) {
    size_t at = i;
    char32_t c = next_cp(word, i);
    bool single = c < 0x10000 && bmp_char_id_[c] >= 0;
    if (prev_single && single && !adjacent_.contains(prev, c)) {
      merge_cached(word.substr(piece, at - piece), out);
      piece = at;
    }
    prev = c;
    prev_single = single;
  }
  merge_cached(word.substr(piece), out);
}

}  // namespace tessera::tok
