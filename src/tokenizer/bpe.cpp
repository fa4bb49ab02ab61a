#include "tokenizer/bpe.h"

#include <algorithm>
#include <cstdio>

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

  if (m->has_unk_) m->unk_id_ = m->vocab_.find(m->unk_token_);
  m->all_bytes_ = true;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    m->byte_ids_[b] = m->vocab_.find(name);
    if (m->byte_ids_[b] < 0) m->all_bytes_ = false;
  }
  m->cache_ = std::make_unique<CacheShard[]>(kCacheShards);
  return m;
}

void BpeModel::load_vocab(const JNode& vocab) {
  if (!vocab.is_object()) vocab.fail("expected an object of token -> id");
  simdjson::dom::object obj = vocab.e.get_object();
  size_t n = obj.size(), key_bytes = 0;
  for (auto kv : obj) key_bytes += kv.key.size();
  vocab_.reserve(n, key_bytes);
  int64_t max_id = -1;
  for (auto kv : obj) {
    int64_t id;
    if (kv.value.get_int64().get(id) != simdjson::SUCCESS || id < 0 || id > INT32_MAX) {
      vocab.fail("token \"" + std::string(kv.key) + "\" has no valid id");
    }
    vocab_.insert(kv.key, static_cast<int32_t>(id));
    max_id = std::max(max_id, id);
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

void BpeModel::load_merges(const JNode& merges) {
  if (!merges.is_array()) merges.fail("expected an array");
  simdjson::dom::array arr = merges.e.get_array();
  merges_.reserve(arr.size());
  std::string joined;
  uint32_t rank = 0;
  size_t index = 0;
  auto bad = [&](const std::string& why) {
    merges.fail("merge " + std::to_string(index) + ": " + why);
  };
  for (JElem item : arr) {
    std::string_view a, b;
    if (item.is_string()) {
      std::string_view line = item.get_string().value_unsafe();
      if (line.substr(0, 8) == "#version") {
        ++index;
        continue;
      }
      size_t sp = line.find(' ');
      if (sp == std::string_view::npos || line.find(' ', sp + 1) != std::string_view::npos) {
        bad("\"" + std::string(line) + "\" is not two tokens separated by one space");
      }
      a = line.substr(0, sp);
      b = line.substr(sp + 1);
    } else if (item.is_array()) {
      simdjson::dom::array pair = item.get_array().value_unsafe();
      if (pair.size() != 2 || !pair.at(0).is_string() || !pair.at(1).is_string()) {
        bad("expected a pair of token strings");
      }
      a = pair.at(0).get_string().value_unsafe();
      b = pair.at(1).get_string().value_unsafe();
    } else {
      bad("expected \"a b\" or [\"a\", \"b\"]");
    }
    int32_t ia = vocab_.find(a), ib = vocab_.find(b);
    if (ia < 0) bad("token \"" + std::string(a) + "\" is not in the vocabulary");
    if (ib < 0) bad("token \"" + std::string(b) + "\" is not in the vocabulary");
    // ref: models/bpe/model.rs build(): the merged token is a + b without b's subword prefix.
    joined.assign(a);
    joined.append(b.substr(std::min(prefix_.size(), b.size())));
    int32_t inew = vocab_.find(joined);
    if (inew < 0) bad("merged token \"" + joined + "\" is not in the vocabulary");
    merges_.insert(ia, ib, PairMap::Value{rank, inew});
    ++rank;
    ++index;
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

struct QueueItem {
  uint32_t rank;
  uint32_t pos;
  int32_t new_id;
  // std heap is a max-heap: "less" means lower priority = higher (rank, pos).
  bool operator<(const QueueItem& o) const {
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};

}  // namespace

// ref: models/bpe/model.rs merge_word and word.rs Word::merge_all (without dropout).
void BpeModel::merge_word(std::string_view w, std::vector<int32_t>& out) const {
  thread_local std::vector<Symbol> syms;
  thread_local std::vector<QueueItem> queue;
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

  for (size_t p = 0; p + 1 < syms.size(); ++p) {
    if (const PairMap::Value* m = merges_.find(syms[p].id, syms[p + 1].id)) {
      queue.push_back(QueueItem{m->rank, static_cast<uint32_t>(p), m->id});
    }
  }
  std::make_heap(queue.begin(), queue.end());
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end());
    QueueItem top = queue.back();
    queue.pop_back();
    Symbol& cur = syms[top.pos];
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
    if (right.next >= 0) syms[right.next].prev = static_cast<int32_t>(top.pos);
    if (cur.prev >= 0) {
      if (const PairMap::Value* pm = merges_.find(syms[cur.prev].id, cur.id)) {
        queue.push_back(QueueItem{pm->rank, static_cast<uint32_t>(cur.prev), pm->id});
        std::push_heap(queue.begin(), queue.end());
      }
    }
    if (cur.next >= 0) {
      if (const PairMap::Value* nm = merges_.find(cur.id, syms[cur.next].id)) {
        queue.push_back(QueueItem{nm->rank, top.pos, nm->id});
        std::push_heap(queue.begin(), queue.end());
      }
    }
  }
  for (const Symbol& s : syms) {
    if (s.len != 0) out.push_back(s.id);
  }
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    int32_t id = vocab_.find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
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

}  // namespace tessera::tok
