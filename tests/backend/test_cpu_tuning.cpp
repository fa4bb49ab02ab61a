// TESSERA_CPU_TUNING's parser: every key and value, the defaults, and the errors (naming the
// variable, the key and the allowed values) for what it does not know.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

#include "backend/cpu/cpu_tuning.h"
#include "core/thread_pool.h"
#include "tessera/error.h"

namespace tessera::cpu {
namespace {

std::string error_of(const char* spec) {
  try {
    parse_cpu_tuning(spec);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    return e.what();
  }
  return "";
}

TEST(CpuTuning, DefaultsAndEveryKey) {
  const CpuTuning d = parse_cpu_tuning("");
  EXPECT_EQ(d.isa, Isa::avx512);
  EXPECT_EQ(d.threads, 0);
  EXPECT_EQ(d.spin_us, 200);
  EXPECT_EQ(d.linear, LinearPath::automatic);
  const CpuTuning t = parse_cpu_tuning(" isa=avx2 , threads=3,spin_us=0,linear=onednn,");
  EXPECT_EQ(t.isa, Isa::avx2);
  EXPECT_EQ(t.threads, 3);
  EXPECT_EQ(t.spin_us, 0);
  EXPECT_EQ(t.linear, LinearPath::onednn);
  EXPECT_EQ(parse_cpu_tuning("isa=scalar,isa=avx512").isa, Isa::avx512);  // the last one counts
  EXPECT_EQ(parse_cpu_tuning("linear=dpbf16").linear, LinearPath::dpbf16);
  EXPECT_EQ(parse_cpu_tuning("linear=fma").linear, LinearPath::fma);
}

TEST(CpuTuning, UnknownKeysAndValuesNameTheVariableKeyAndValues) {
  std::string e = error_of("threads=2,isa=avx1024");
  EXPECT_NE(e.find("TESSERA_CPU_TUNING"), std::string::npos) << e;
  EXPECT_NE(e.find("isa=avx1024"), std::string::npos) << e;
  EXPECT_NE(e.find("scalar, avx2, avx512"), std::string::npos) << e;
  e = error_of("thread=2");
  EXPECT_NE(e.find("unknown key 'thread'"), std::string::npos) << e;
  EXPECT_NE(e.find("isa, threads, spin_us, linear"), std::string::npos) << e;
  EXPECT_NE(error_of("threads=-1").find("threads="), std::string::npos);
  EXPECT_NE(error_of("threads=2x").find("threads=2x"), std::string::npos);
  EXPECT_NE(error_of("spin_us").find("spin_us="), std::string::npos);  // no value
  EXPECT_NE(error_of("linear=mkl").find("auto, fma, dpbf16, onednn"), std::string::npos);
}

// The global pool takes its size from the environment's tuning (registered by cpu_tuning.cpp).
TEST(CpuTuning, GlobalPoolSizeFollowsTheTuning) {
  const int want = cpu_env_tuning().threads;
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(ThreadPool::global().size(), want > 0 ? want : hw);
}

// spin_us = 0: idle workers sleep at once and are woken for every region.
TEST(CpuTuning, PoolWithoutSpinning) {
  ThreadPool pool(2, 0);
  std::atomic<int64_t> sum{0};
  for (int r = 0; r < 200; ++r)
    pool.parallel_for(100, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) sum += i;
    });
  EXPECT_EQ(sum.load(), 200 * 4950);
}

}  // namespace
}  // namespace tessera::cpu
