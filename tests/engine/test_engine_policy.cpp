// The engine's policies on plain numbers: the EOS set, the default sizes, and the KV pool's
// budget from --kv-memory, max_seqs full contexts, the device's free memory and --memory-limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>

#include "engine/engine_policy.h"
#include "tessera/error.h"

namespace tessera {
namespace {

constexpr size_t GiB = size_t{1} << 30, MiB = size_t{1} << 20;

// The error `f` throws (kind and message), or nothing.
template <class F>
std::optional<Error> error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

TEST(EosPolicy, UnionOfEverySourceSortedAndInTheVocabulary) {
  const std::vector<int> config = {106, 1, 1};
  const std::vector<int32_t> turns = {107, 1};
  EXPECT_EQ(eos_set(config, 2, turns, 1000), (std::vector<int32_t>{1, 2, 106, 107}));
  // Ids outside the vocabulary (a config written for a bigger one, -1 for "none") are dropped.
  const std::vector<int> bad = {-1, 5, 5000};
  EXPECT_EQ(eos_set(bad, std::nullopt, {}, 1000), std::vector<int32_t>{5});
  EXPECT_EQ(eos_set({}, 999, {}, 1000), std::vector<int32_t>{999});
  EXPECT_EQ(eos_set({}, 1000, {}, 1000), std::vector<int32_t>{});
}

TEST(EosPolicy, KnowsTheEndOfTurnTokensOfEachFamily) {
  std::vector<std::string> names;
  for (const char* t : end_of_turn_tokens()) names.push_back(t);
  for (const char* want : {"<end_of_turn>", "<|eot_id|>", "<|im_end|>"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

TEST(SizingPolicy, ContextDefaultsAndLimit) {
  EXPECT_EQ(context_length_for(0, 131072, /*gpu=*/true), 32768);
  EXPECT_EQ(context_length_for(0, 131072, /*gpu=*/false), 8192);
  EXPECT_EQ(context_length_for(0, 2048, true), 2048);
  EXPECT_EQ(context_length_for(4096, 131072, false), 4096);
  auto e = error_of([] { context_length_for(4096, 2048, true); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind(), ErrorKind::invalid_argument);
  EXPECT_NE(std::string(e->what()).find("max_position_embeddings (2048)"), std::string::npos);
}

TEST(SizingPolicy, StepAndSequenceDefaults) {
  EXPECT_EQ(max_batch_tokens_for(0, true), 8192);
  EXPECT_EQ(max_batch_tokens_for(0, false), 512);
  EXPECT_EQ(max_batch_tokens_for(-3, false), 512);
  EXPECT_EQ(max_batch_tokens_for(100, true), 100);
  // A bidirectional model's inputs run whole: the default step holds its context.
  EXPECT_EQ(max_batch_tokens_for(0, false, 2048), 2048);
  EXPECT_EQ(max_batch_tokens_for(0, true, 2048), 8192);
  EXPECT_EQ(max_batch_tokens_for(100, false, 2048), 100);  // as asked: longer inputs are refused
  EXPECT_EQ(max_seqs_for(0, true), 256);
  EXPECT_EQ(max_seqs_for(0, false), 16);
  EXPECT_EQ(max_seqs_for(1, true), 1);
}

TEST(SizingPolicy, KvMemoryGivenIsTakenAsIs) {
  KvSizing s;
  s.requested = 3 * GiB;
  s.full = 100 * GiB;
  s.gpu = true;
  s.device_free = 1 * GiB;  // not second-guessed: the pool's allocation reports it
  EXPECT_EQ(kv_pool_bytes(s), 3 * GiB);
}

TEST(SizingPolicy, KvMemoryGivenIsRefusedPastTheMachinesMemory) {
  KvSizing s;
  s.requested = 1000 * GiB;
  s.host_memory = 64 * GiB;
  auto e = error_of([&] { kv_pool_bytes(s); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind(), ErrorKind::out_of_memory);
  EXPECT_EQ(std::string(e->what()),
            "the requested KV memory (1000.00 GiB) is more than the machine has (64.00 GiB)");
  s.requested = 64 * GiB;
  EXPECT_EQ(kv_pool_bytes(s), 64 * GiB);
}

TEST(SizingPolicy, AutomaticKvIsFullContextsCappedPerDevice) {
  KvSizing s;
  s.full = 2 * GiB;
  EXPECT_EQ(kv_pool_bytes(s), 1 * GiB);  // the CPU's cap
  s.full = 300 * MiB;
  EXPECT_EQ(kv_pool_bytes(s), 300 * MiB);
  s.gpu = true;
  s.full = 100 * GiB;
  EXPECT_EQ(kv_pool_bytes(s), 24 * GiB);  // the GPU's cap, with no free-memory figure
}

TEST(SizingPolicy, AutomaticKvFitsTheGpusFreeMemory) {
  KvSizing s;
  s.gpu = true;
  s.full = 100 * GiB;
  s.device_free = 10 * GiB;
  s.activations = 1 * GiB;
  // Nine tenths of the free memory, less the activations.
  EXPECT_EQ(kv_pool_bytes(s), 10 * GiB / 10 * 9 - 1 * GiB);
  s.device_free = 200 * GiB;
  EXPECT_EQ(kv_pool_bytes(s), 24 * GiB);
  s.device_free = 1 * GiB;
  s.activations = 1 * GiB;
  auto e = error_of([&] { kv_pool_bytes(s); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind(), ErrorKind::out_of_memory);
  EXPECT_NE(std::string(e->what()).find("free GPU memory"), std::string::npos) << e->what();
}

TEST(SizingPolicy, AutomaticKvFitsTheMemoryLimit) {
  KvSizing s;
  s.full = 1 * GiB;
  s.in_use = 100 * MiB;  // the weights
  s.activations = 50 * MiB;
  s.memory_limit = 250 * MiB;
  EXPECT_EQ(kv_pool_bytes(s), (250 * MiB - 150 * MiB) * 9 / 10);
  s.memory_limit = 150 * MiB;
  auto e = error_of([&] { kv_pool_bytes(s); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind(), ErrorKind::out_of_memory);
  EXPECT_NE(std::string(e->what()).find("is too small"), std::string::npos) << e->what();
}

TEST(SizingPolicy, MemoryLimitCheckedAfterThePool) {
  EXPECT_FALSE(error_of([] { check_memory_limit(0, 10 * GiB, GiB, GiB, GiB); }));
  EXPECT_FALSE(error_of([] { check_memory_limit(2 * GiB, GiB, GiB, GiB, GiB); }));
  auto e = error_of([] { check_memory_limit(2 * GiB, GiB + 1, GiB, GiB, GiB); });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind(), ErrorKind::out_of_memory);
  EXPECT_NE(std::string(e->what()).find("cannot hold the weights"), std::string::npos);
}

}  // namespace
}  // namespace tessera
