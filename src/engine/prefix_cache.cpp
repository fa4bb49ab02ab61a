#include "engine/prefix_cache.h"

#include <algorithm>

#include "core/rng.h"

namespace tessera {

std::vector<uint64_t> block_chain_hashes(std::span<const int32_t> tokens, int block_size) {
  std::vector<uint64_t> out;
  uint64_t h = 0x51ed270b27fbd3f1ull;
  for (size_t b = 0; (b + 1) * block_size <= tokens.size(); ++b) {
    for (int i = 0; i < block_size; ++i)
      h = mix64(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(tokens[b * block_size + i])) +
                     0x9e37ull * i));
    out.push_back(h);
  }
  return out;
}

void register_full_blocks(KvPool& pool, const SequenceKv& seq, std::span<const uint64_t> hashes,
                          int first_block, int last_block) {
  last_block = std::min<int>(last_block, static_cast<int>(hashes.size()));
  for (int g = 0; g < pool.num_groups(); ++g) {
    const auto& table = seq.table(g);
    for (int b = first_block; b < last_block && b < static_cast<int>(table.size()); ++b)
      if (table[b] >= 0) pool.register_block(g, table[b], hashes[b]);
  }
}

int adopt_cached_prefix(KvPool& pool, SequenceKv& seq, std::span<const uint64_t> hashes,
                        int max_blocks) {
  const int bs = pool.block_size();
  int n = std::min<int>(max_blocks, static_cast<int>(hashes.size()));
  // Full-attention groups need every block of the prefix.
  for (int g = 0; g < pool.num_groups(); ++g) {
    if (pool.group_window(g) > 0) continue;
    int k = 0;
    while (k < n && pool.is_cached(g, hashes[k])) ++k;
    n = k;
  }
  // Sliding groups need the blocks that position n * bs still sees.
  auto first_needed = [&](int g, int blocks) {
    return std::max(0, blocks * bs - pool.group_window(g) + 1) / bs;
  };
  for (; n > 0; --n) {
    bool ok = true;
    for (int g = 0; g < pool.num_groups() && ok; ++g) {
      if (pool.group_window(g) == 0) continue;
      for (int b = first_needed(g, n); b < n && ok; ++b) ok = pool.is_cached(g, hashes[b]);
    }
    if (ok) break;
  }
  if (n == 0) return 0;
  std::vector<std::vector<int>> tables(pool.num_groups());
  for (int g = 0; g < pool.num_groups(); ++g) {
    const int from = pool.group_window(g) > 0 ? first_needed(g, n) : 0;
    tables[g].assign(n, -1);
    for (int b = from; b < n; ++b) tables[g][b] = pool.lookup(g, hashes[b]);
  }
  seq.adopt_prefix(std::move(tables), n * bs);
  return n * bs;
}

}  // namespace tessera
