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
#pragma once

#include <cstdint>
#include <memory>
#include <span>
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

  int block_size() const { return block_size_; }
  int num_groups() const { return static_cast<int>(groups_.size()); }
  int group_window(int g) const { return groups_[g].window; }
  int total_blocks(int g) const { return groups_[g].num_blocks; }
  int free_blocks(int g) const { return static_cast<int>(groups_[g].free.size()); }
  int used_blocks(int g) const { return total_blocks(g) - free_blocks(g); }
  int used_blocks_all() const;
  size_t bytes() const { return bytes_; }
  std::span<const KvLayerView> layers() const { return layers_; }

  // Blocks a sequence of `len` positions holds in group g at its peak while adding up to
  // `step` tokens per step (sliding groups hold only the window).
  int blocks_needed(int g, int len, int step) const;

  int allocate(int g);  // -1 when none is free
  void retain(int g, int block);
  void release(int g, int block);
  int ref_count(int g, int block) const { return groups_[g].refs[block]; }

 private:
  struct Group {
    int window = 0;
    int num_blocks = 0;
    std::vector<int> free;  // LIFO free list
    std::vector<int> refs;
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
  // Appends block ids for prefix sharing (group g, full blocks holding positions from length()).
  void adopt_block(int g, int block);
  void set_length(int n) { length_ = n; }

 private:
  void drop_out_of_window(int first_new_pos);
  KvPool& pool_;
  std::vector<std::vector<int>> tables_;  // per group: block per logical block index, -1 if released
  int length_ = 0;
};

}  // namespace tessera
