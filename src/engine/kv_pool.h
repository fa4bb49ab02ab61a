// The paged KV pool: fixed-size blocks of block_size token slots, shared by all sequences, with a
// block table per sequence and KV group. Layers that share an attention window form a group; a
// sliding-window group releases a sequence's blocks once every position in them has left the
// window, so long generations hold only about window / block_size blocks per sliding group.
//
// Storage: per layer, K and V of [num_blocks(group), block_size, kv_heads, head_dim]. Groups have
// separate block spaces sized from one byte budget: sliding groups get enough blocks for
// max_seqs full windows (as llama.cpp sizes its SWA cache) or their layer share, whichever is
// smaller, and full-attention groups the rest.
//
// Blocks are reference counted so that prefix sharing can map one block into several sequences.
// Prefix cache: a full block can be registered under the hash of its tokens and every token
// before it (a hash chain); a later sequence with the same prefix adopts it instead of computing
// it again. A registered block whose last user is done stays cached but evictable: allocate()
// takes never-used blocks first, then evicts the least recently released cached block.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "models/model.h"

namespace tessera {

struct KvPoolOptions {
  size_t budget_bytes = 0;  // 0: derive from max_seqs full-length sequences
  int block_size = 16;
  int max_seqs = 64;          // sequences the scheduler runs at once
  int max_step_tokens = 512;  // tokens one sequence may add in one step (prefill chunk)
  int max_context = 0;        // positions per sequence
};

class KvPool {
 public:
  KvPool(ComputeBackend& backend, const KvSpec& spec, const KvPoolOptions& opts);

  // Bytes that hold max_seqs sequences of max_context positions (what budget_bytes = 0 means).
  static size_t bytes_for(const KvSpec& spec, const KvPoolOptions& opts);

  int block_size() const { return block_size_; }
  int num_groups() const { return static_cast<int>(groups_.size()); }
  int group_window(int g) const { return groups_[g].window; }
  int total_blocks(int g) const { return groups_[g].num_blocks; }
  // Blocks allocate() can hand out: never used or cached-but-unreferenced.
  int free_blocks(int g) const {
    return static_cast<int>(groups_[g].free.size() + groups_[g].evictable.size());
  }
  int used_blocks(int g) const { return total_blocks(g) - free_blocks(g); }  // referenced
  int cached_blocks(int g) const { return static_cast<int>(groups_[g].cache.size()); }
  int used_blocks_all() const;
  int total_blocks_all() const;
  size_t bytes() const { return bytes_; }
  std::span<const KvLayerView> layers() const { return layers_; }

  // Blocks a sequence of `len` positions holds in group g at its peak while adding up to
  // `step` tokens per step (sliding groups hold only the window).
  int blocks_needed(int g, int len, int step) const;

  int allocate(int g);  // -1 when none is free
  void retain(int g, int block);
  void release(int g, int block);
  int ref_count(int g, int block) const { return groups_[g].refs[block]; }

  // Prefix cache. register_block: `block` (full, referenced) holds the tokens whose chain hash is
  // `hash`; a hash already cached keeps its first block. lookup: the cached block for `hash`, or
  // -1; a hit is retained for the caller.
  void register_block(int g, int block, uint64_t hash);
  int lookup(int g, uint64_t hash);
  bool is_cached(int g, uint64_t hash) const { return groups_[g].cache.count(hash) != 0; }

 private:
  struct Group {
    int window = 0;
    int num_blocks = 0;
    std::vector<int> free;  // LIFO list of never-cached free blocks
    std::vector<int> refs;
    std::vector<uint64_t> hash;  // per block, valid when in_cache
    std::vector<char> in_cache;
    std::unordered_map<uint64_t, int> cache;
    std::list<int> evictable;  // cached blocks with no reference, least recently released first
    std::vector<std::list<int>::iterator> evict_pos;
  };
  ComputeBackend& backend_;
  KvSpec spec_;
  int block_size_ = 16;
  std::vector<Group> groups_;
  std::vector<std::unique_ptr<DeviceBuffer>> storage_;
  std::vector<KvLayerView> layers_;
  size_t bytes_ = 0;
};

// One sequence's view of the pool: its block tables per group and how many positions it holds.
class SequenceKv {
 public:
  explicit SequenceKv(KvPool& pool);
  ~SequenceKv();
  SequenceKv(const SequenceKv&) = delete;
  SequenceKv& operator=(const SequenceKv&) = delete;

  int length() const { return length_; }  // positions written (or about to be, after reserve)
  // Makes room for positions [length, length + n): releases sliding blocks that the new tokens
  // no longer see, then allocates. Returns false (changing nothing it allocated) when the pool
  // is short of blocks.
  bool reserve(int n);
  void release_all();
  const std::vector<int>& table(int g) const { return tables_[g]; }
  // Takes over already-retained blocks for positions [0, length): per group, one entry per
  // logical block (-1 where a sliding group needs none). The sequence must be empty.
  void adopt_prefix(std::vector<std::vector<int>> tables, int length);

 private:
  void drop_out_of_window(int first_new_pos);
  KvPool& pool_;
  std::vector<std::vector<int>>
      tables_;  // per group: block per logical block index, -1 if released
  int length_ = 0;
};

}  // namespace tessera
