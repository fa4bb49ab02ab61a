#include "engine/batch_builder.h"

#include <algorithm>

#include "core/check.h"

namespace tessera {

HostBatch build_batch(const KvPool& pool, std::span<const BatchEntry> entries) {
  HostBatch b;
  const int bs = pool.block_size();
  const int S = static_cast<int>(entries.size());
  b.groups.resize(pool.num_groups());
  for (int g = 0; g < pool.num_groups(); ++g) {
    int mx = 1;
    for (const auto& e : entries) mx = std::max<int>(mx, static_cast<int>(e.kv->table(g).size()));
    b.groups[g].max_blocks = mx;
    b.groups[g].block_table.assign(static_cast<size_t>(S) * mx, -1);
    for (int s = 0; s < S; ++s) {
      const auto& t = entries[s].kv->table(g);
      std::copy(t.begin(), t.end(), b.groups[g].block_table.begin() + static_cast<int64_t>(s) * mx);
    }
  }
  for (int s = 0; s < S; ++s) {
    const auto& e = entries[s];
    const int n = static_cast<int>(e.tokens.size());
    TS_ASSERT(n > 0 && e.kv->length() >= n);
    const int first = e.kv->length() - n;
    if (e.sampled_row >= 0) {
      TS_ASSERT(n == 1);
      b.sampled.push_back({b.num_tokens(), e.sampled_row});
    }
    b.seq_q_start.push_back(b.num_tokens());
    b.seq_q_len.push_back(n);
    b.seq_kv_len.push_back(e.kv->length());
    for (int i = 0; i < n; ++i) {
      const int pos = first + i;
      if (e.logits_all || (e.logits_last && i == n - 1)) b.logit_rows.push_back(b.num_tokens());
      b.tokens.push_back(e.tokens[i]);
      b.positions.push_back(pos);
      b.token_seq.push_back(s);
      for (int g = 0; g < pool.num_groups(); ++g) {
        const int blk = e.kv->table(g)[pos / bs];
        TS_ASSERT(blk >= 0);
        b.groups[g].slot_mapping.push_back(blk * bs + pos % bs);
      }
    }
  }
  return b;
}

}  // namespace tessera
