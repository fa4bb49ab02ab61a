// The paged KV pool: block accounting per group, sliding-window release, the prefix cache's
// reference counts and LRU eviction, and the sizing rule.
#include <gtest/gtest.h>

#include "backend/backend.h"
#include "engine/kv_pool.h"
#include "engine/prefix_cache.h"

namespace tessera {
namespace {

KvSpec two_groups(int window) {
  KvSpec s;
  s.num_kv_heads = 1;
  s.head_dim = 8;
  s.dtype = DType::f32;
  s.group_window = {window, 0};  // group 0 slides, group 1 is full attention
  s.layer_group = {0, 0, 0, 1};
  return s;
}

struct KvPoolTest : ::testing::Test {
  std::unique_ptr<ComputeBackend> be = make_cpu_backend();
  std::unique_ptr<KvPool> make(int window, size_t budget, int max_seqs = 4) {
    KvPoolOptions o;
    o.block_size = 4;
    o.max_context = 64;
    o.max_seqs = max_seqs;
    o.max_step_tokens = 4;
    o.budget_bytes = budget;
    return std::make_unique<KvPool>(*be, two_groups(window), o);
  }
};

TEST_F(KvPoolTest, SlidingGroupReleasesBlocksOutsideTheWindow) {
  auto pool = make(8, 0);
  SequenceKv seq(*pool);
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(seq.reserve(1));
  // Full attention holds all 15 blocks; the sliding group only what position 59 still sees
  // (keys 52..59: blocks 13 and 14) plus nothing older.
  EXPECT_EQ(pool->used_blocks(1), 15);
  EXPECT_LE(pool->used_blocks(0), 3);
  int live = 0;
  for (int b : seq.table(0)) live += b >= 0;
  EXPECT_EQ(live, pool->used_blocks(0));
  seq.release_all();
  EXPECT_EQ(pool->used_blocks_all(), 0);
}

TEST_F(KvPoolTest, SizingGivesSlidingGroupsAtMostMaxSeqsWindows) {
  // Default budget: 4 sequences of 64 positions. Full group: 16 blocks each = 64 blocks.
  auto pool = make(8, 0);
  EXPECT_EQ(pool->total_blocks(1), 64);
  // Sliding: window 8 + step 4 - 1 = 11 positions -> 3 blocks + 1 for alignment, per sequence.
  EXPECT_EQ(pool->total_blocks(0), 16);
  EXPECT_EQ(pool->blocks_needed(0, 64, 4), 4);
  EXPECT_EQ(pool->blocks_needed(1, 64, 4), 16);
  EXPECT_EQ(KvPool::bytes_for(two_groups(8), {.budget_bytes = 0,
                                              .block_size = 4,
                                              .max_seqs = 4,
                                              .max_step_tokens = 4,
                                              .max_context = 64}),
            pool->bytes());
}

TEST_F(KvPoolTest, ReserveFailsWithoutSideEffects) {
  auto pool = make(0, 2 * 4 * 8 * 4 * 4 * 2);  // bytes for 2 blocks in each of the 2 groups
  SequenceKv a(*pool), b(*pool);
  ASSERT_TRUE(a.reserve(8));   // 2 blocks
  EXPECT_FALSE(b.reserve(1));  // none left
  EXPECT_EQ(b.length(), 0);
  EXPECT_TRUE(b.table(0).empty());
  a.release_all();
  EXPECT_TRUE(b.reserve(1));
}

TEST_F(KvPoolTest, PrefixCacheSharesAndEvictsLeastRecentlyReleased) {
  auto pool = make(0, 0);
  std::vector<int32_t> tokens(16);
  for (int i = 0; i < 16; ++i) tokens[i] = 100 + i;
  auto hashes = block_chain_hashes(tokens, 4);
  ASSERT_EQ(hashes.size(), 4u);
  SequenceKv a(*pool);
  ASSERT_TRUE(a.reserve(16));
  register_full_blocks(*pool, a, hashes, 0, 4);
  // A second sequence with the same 12-token prefix adopts 3 blocks (the 4th is left to compute).
  SequenceKv b(*pool);
  EXPECT_EQ(adopt_cached_prefix(*pool, b, hashes, 3), 12);
  EXPECT_EQ(b.table(0)[0], a.table(0)[0]);
  EXPECT_EQ(pool->ref_count(0, a.table(0)[0]), 2);
  // A different prefix shares nothing.
  std::vector<int32_t> other(tokens);
  other[0] = 7;
  SequenceKv c(*pool);
  EXPECT_EQ(adopt_cached_prefix(*pool, c, block_chain_hashes(other, 4), 3), 0);
  // Released cached blocks stay adoptable but count as free, and are evicted when needed.
  a.release_all();
  b.release_all();
  EXPECT_EQ(pool->used_blocks_all(), 0);
  EXPECT_EQ(pool->cached_blocks(0), 4);
  SequenceKv d(*pool);
  EXPECT_EQ(adopt_cached_prefix(*pool, d, hashes, 4), 16);
  d.release_all();
  SequenceKv hog(*pool);
  ASSERT_TRUE(hog.reserve(64 * 4 / 4 * 4));  // every block of the pool
  EXPECT_EQ(pool->cached_blocks(0), 0);
  hog.release_all();
}

TEST_F(KvPoolTest, SlidingPrefixNeedsOnlyTheWindow) {
  auto pool = make(8, 0);
  std::vector<int32_t> tokens(40);
  for (int i = 0; i < 40; ++i) tokens[i] = i + 1;
  auto hashes = block_chain_hashes(tokens, 4);
  SequenceKv a(*pool);
  for (int i = 0; i < 40; i += 4) {
    ASSERT_TRUE(a.reserve(4));
    register_full_blocks(*pool, a, hashes, i / 4, i / 4 + 1);
  }
  // The sliding group dropped its early blocks, yet a prefix of 9 blocks (36 tokens) is usable:
  // position 36 sees keys 29..35, i.e. blocks 7 and 8, which are still alive.
  SequenceKv b(*pool);
  EXPECT_EQ(adopt_cached_prefix(*pool, b, hashes, 9), 36);
  EXPECT_EQ(b.table(0)[0], -1);
  EXPECT_GE(b.table(0)[8], 0);
  EXPECT_EQ(b.table(1)[0], a.table(1)[0]);
}

}  // namespace
}  // namespace tessera
