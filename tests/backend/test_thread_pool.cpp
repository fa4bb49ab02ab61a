// The thread pool the CPU kernels run on (src/core/thread_pool.*): every index exactly once,
// range bounds on the grain, nested calls inline, concurrent callers, many short regions.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace tessera {
namespace {

void expect_each_once(const std::vector<std::atomic<int>>& hits, const char* what) {
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << what << " index " << i;
}

TEST(ThreadPool, ParallelForCoversEachIndexOnceOnGrainBounds) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{17}, int64_t{1000}}) {
      for (int64_t grain : {int64_t{1}, int64_t{16}}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.parallel_for(
            n,
            [&](int64_t b, int64_t e, int t) {
              EXPECT_EQ(b % grain, 0);
              EXPECT_TRUE(e == n || e % grain == 0);
              EXPECT_GE(t, 0);
              EXPECT_LT(t, pool.size());
              for (int64_t i = b; i < e; ++i) hits[i]++;
            },
            grain);
        expect_each_once(hits, "parallel_for");
      }
    }
  }
}

TEST(ThreadPool, DynamicChunksCoverEachIndexOnce) {
  ThreadPool pool(2);
  for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{64}, int64_t{1001}}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.parallel_dynamic(n, 7, [&](int64_t b, int64_t e, int) {
      EXPECT_EQ(b % 7, 0);
      EXPECT_LE(e - b, 7);
      for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    expect_each_once(hits, "parallel_dynamic");
  }
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.parallel_for(4, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i)
      pool.parallel_for(10,
                        [&](int64_t b2, int64_t e2, int) { inner += static_cast<int>(e2 - b2); });
  });
  EXPECT_EQ(inner.load(), 40);
}

TEST(ThreadPool, ManyShortRegionsAndConcurrentCallers) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  auto caller = [&] {
    for (int r = 0; r < 3000; ++r)
      pool.parallel_for(8, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) sum += i;
      });
  };
  std::thread other(caller);
  caller();
  other.join();
  EXPECT_EQ(sum.load(), 2 * 3000 * 28);
}

TEST(ThreadPool, RunOnAllRunsEachIndexOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(3);
  pool.run_on_all([&](int i) { hits[i]++; });
  expect_each_once(hits, "run_on_all");
}

}  // namespace
}  // namespace tessera
