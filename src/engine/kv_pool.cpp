#include "engine/kv_pool.h"

#include <algorithm>

#include "core/check.h"

namespace tessera {

namespace {
// Positions a sequence of `len` keeps in a layer of window `w` (0: full) when steps add up to
// `step` tokens. In 64 bits: a config's sliding_window may be as large as INT32_MAX.
int window_span(int w, int len, int step) {
  if (w <= 0) return len;
  return static_cast<int>(std::min<int64_t>(len, int64_t{w} - 1 + std::max(step, 1)));
}
}  // namespace

KvPool::KvPool(ComputeBackend& backend, const KvSpec& spec, const KvPoolOptions& opts)
    : backend_(backend), spec_(spec), block_size_(opts.block_size) {
  if (opts.block_size <= 0) fail_arg("KV block size must be positive");
  if (opts.max_context <= 0) fail_arg("KV pool needs a positive max_context");
  const int ng = static_cast<int>(spec.group_window.size());
  std::vector<int> layers_in(ng, 0);
  for (int g : spec.layer_group) ++layers_in[g];
  const size_t slot_bytes =
      static_cast<size_t>(spec.num_kv_heads) * spec.head_dim * dtype_size(spec.dtype);
  // Bytes of one block (K and V) in group g.
  auto block_bytes = [&](int g) { return 2 * slot_bytes * block_size_ * layers_in[g]; };
  groups_.resize(ng);
  for (int g = 0; g < ng; ++g) groups_[g].window = spec.group_window[g];
  const int full_blocks_per_seq = (opts.max_context + block_size_ - 1) / block_size_;
  std::vector<int> per_seq(ng);
  for (int g = 0; g < ng; ++g)
    per_seq[g] = blocks_needed(g, opts.max_context, opts.max_step_tokens);

  size_t budget = opts.budget_bytes ? opts.budget_bytes : bytes_for(spec, opts);
  // Equal block counts in every group (the short-sequence regime), then cap sliding groups at
  // max_seqs windows and give what that frees to the full-attention groups.
  size_t all = 0;
  for (int g = 0; g < ng; ++g) all += block_bytes(g);
  size_t equal = all ? budget / all : 0;
  size_t spent = 0, full_bytes = 0;
  for (int g = 0; g < ng; ++g) {
    if (groups_[g].window > 0) {
      size_t cap = static_cast<size_t>(per_seq[g]) * opts.max_seqs;
      groups_[g].num_blocks = static_cast<int>(std::min(equal, cap));
      spent += groups_[g].num_blocks * block_bytes(g);
    } else {
      full_bytes += block_bytes(g);
    }
  }
  for (int g = 0; g < ng; ++g)
    if (groups_[g].window == 0)
      groups_[g].num_blocks = static_cast<int>(std::min<size_t>(
          full_bytes ? (budget - std::min(budget, spent)) / full_bytes : 0, 1u << 30));
  (void)full_blocks_per_seq;
  for (int g = 0; g < ng; ++g) {
    Group& G = groups_[g];
    if (G.num_blocks <= 0)
      fail(ErrorKind::out_of_memory, "KV budget of " + format_bytes(budget) +
                                         " holds no block for a group of " +
                                         std::to_string(layers_in[g]) + " layers");
    G.refs.assign(G.num_blocks, 0);
    G.hash.assign(G.num_blocks, 0);
    G.in_cache.assign(G.num_blocks, 0);
    G.evict_pos.resize(G.num_blocks);
    G.free.resize(G.num_blocks);
    for (int i = 0; i < G.num_blocks; ++i) G.free[i] = G.num_blocks - 1 - i;  // hand out 0 first
  }
  for (size_t l = 0; l < spec.layer_group.size(); ++l) {
    const int g = spec.layer_group[l];
    const size_t bytes = slot_bytes * block_size_ * groups_[g].num_blocks;
    storage_.push_back(backend.alloc(2 * bytes, "KV cache"));
    bytes_ += 2 * bytes;
    KvLayerView v;
    v.k = storage_.back()->data();
    v.v = static_cast<char*>(v.k) + bytes;
    v.dtype = spec.dtype;
    v.num_blocks = groups_[g].num_blocks;
    v.block_size = block_size_;
    v.num_kv_heads = spec.num_kv_heads;
    v.head_dim = spec.head_dim;
    layers_.push_back(v);
  }
}

size_t KvPool::bytes_for(const KvSpec& spec, const KvPoolOptions& opts) {
  const size_t slot_bytes =
      static_cast<size_t>(spec.num_kv_heads) * spec.head_dim * dtype_size(spec.dtype);
  const int bs = opts.block_size;
  size_t total = 0;
  for (size_t l = 0; l < spec.layer_group.size(); ++l) {
    const int w = spec.group_window[spec.layer_group[l]];
    const int len = opts.max_context;
    const int span = window_span(w, len, opts.max_step_tokens);
    const size_t blocks = static_cast<size_t>((span + bs - 1) / bs + (w > 0 && span < len ? 1 : 0));
    total += 2 * slot_bytes * bs * blocks * static_cast<size_t>(opts.max_seqs);
  }
  return total;
}

int KvPool::blocks_needed(int g, int len, int step) const {
  const int w = groups_[g].window;
  int span = window_span(w, len, step);
  // A span that does not start on a block boundary can touch one block more.
  return (span + block_size_ - 1) / block_size_ + (w > 0 && span < len ? 1 : 0);
}

int KvPool::used_blocks_all() const {
  int n = 0;
  for (int g = 0; g < num_groups(); ++g) n += used_blocks(g);
  return n;
}

int KvPool::total_blocks_all() const {
  int n = 0;
  for (int g = 0; g < num_groups(); ++g) n += total_blocks(g);
  return n;
}

int KvPool::allocate(int g) {
  Group& G = groups_[g];
  int b;
  if (!G.free.empty()) {
    b = G.free.back();
    G.free.pop_back();
  } else if (!G.evictable.empty()) {
    b = G.evictable.front();
    G.evictable.pop_front();
    G.cache.erase(G.hash[b]);
    G.in_cache[b] = 0;
  } else {
    return -1;
  }
  G.refs[b] = 1;
  return b;
}

void KvPool::retain(int g, int block) {
  Group& G = groups_[g];
  if (G.refs[block] == 0) {
    TS_ASSERT(G.in_cache[block]);
    G.evictable.erase(G.evict_pos[block]);
  }
  ++G.refs[block];
}

void KvPool::release(int g, int block) {
  Group& G = groups_[g];
  TS_ASSERT(G.refs[block] > 0);
  if (--G.refs[block] > 0) return;
  if (G.in_cache[block]) {
    G.evict_pos[block] = G.evictable.insert(G.evictable.end(), block);
  } else {
    G.free.push_back(block);
  }
}

void KvPool::register_block(int g, int block, uint64_t hash) {
  Group& G = groups_[g];
  TS_ASSERT(G.refs[block] > 0);
  if (G.in_cache[block] || G.cache.count(hash)) return;
  G.cache.emplace(hash, block);
  G.hash[block] = hash;
  G.in_cache[block] = 1;
}

int KvPool::lookup(int g, uint64_t hash) {
  Group& G = groups_[g];
  auto it = G.cache.find(hash);
  if (it == G.cache.end()) return -1;
  retain(g, it->second);
  return it->second;
}

SequenceKv::SequenceKv(KvPool& pool) : pool_(pool), tables_(pool.num_groups()) {}

SequenceKv::~SequenceKv() {
  release_all();
}

void SequenceKv::release_all() {
  for (int g = 0; g < pool_.num_groups(); ++g) {
    for (int b : tables_[g])
      if (b >= 0) pool_.release(g, b);
    tables_[g].clear();
  }
  length_ = 0;
}

void SequenceKv::drop_out_of_window(int first_new_pos) {
  const int bs = pool_.block_size();
  for (int g = 0; g < pool_.num_groups(); ++g) {
    const int w = pool_.group_window(g);
    if (w <= 0) continue;
    // The new token at first_new_pos sees keys > first_new_pos - w; blocks wholly below that go.
    const int first_needed = std::max(0, first_new_pos - w + 1);
    const int dead_blocks = first_needed / bs;
    for (int i = 0; i < std::min<int>(dead_blocks, static_cast<int>(tables_[g].size())); ++i) {
      if (tables_[g][i] >= 0) {
        pool_.release(g, tables_[g][i]);
        tables_[g][i] = -1;
      }
    }
  }
}

bool SequenceKv::reserve(int n) {
  const int bs = pool_.block_size();
  drop_out_of_window(length_);
  const int need_blocks = (length_ + n + bs - 1) / bs;
  // Check availability first so that a failure changes nothing.
  for (int g = 0; g < pool_.num_groups(); ++g) {
    int missing = need_blocks - static_cast<int>(tables_[g].size());
    if (missing > pool_.free_blocks(g)) return false;
  }
  for (int g = 0; g < pool_.num_groups(); ++g)
    while (static_cast<int>(tables_[g].size()) < need_blocks)
      tables_[g].push_back(pool_.allocate(g));
  length_ += n;
  return true;
}

void SequenceKv::adopt_prefix(std::vector<std::vector<int>> tables, int length) {
  TS_ASSERT(length_ == 0 && tables.size() == tables_.size());
  tables_ = std::move(tables);
  length_ = length;
}

}  // namespace tessera
