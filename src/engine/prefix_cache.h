// Prefix sharing over the KV pool's block cache: chain hashes of full token blocks, and the
// longest cached prefix a new sequence can adopt.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv_pool.h"

namespace tessera {

// hashes[i] identifies tokens [0, (i + 1) * block_size): block i's tokens and everything before.
std::vector<uint64_t> block_chain_hashes(std::span<const int32_t> tokens, int block_size);

// Registers the sequence's full blocks in [first_block, last_block) under `hashes`.
void register_full_blocks(KvPool& pool, const SequenceKv& seq, std::span<const uint64_t> hashes,
                          int first_block, int last_block);

// Finds the longest prefix of at most max_blocks full blocks that every group can supply (full
// groups: every block; sliding groups: the blocks the next position still sees), makes `seq`
// (empty) adopt it and returns its length in tokens (0 when nothing matched).
int adopt_cached_prefix(KvPool& pool, SequenceKv& seq, std::span<const uint64_t> hashes,
                        int max_blocks);

}  // namespace tessera
