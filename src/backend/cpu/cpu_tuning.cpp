#include "backend/cpu/cpu_tuning.h"

#include <cstdlib>
#include <utility>

#include "backend/tuning.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

CpuTuning parse_cpu_tuning(std::string_view spec) {
  CpuTuning t;
  constexpr std::pair<const char*, Isa> isas[] = {
      {"scalar", Isa::scalar}, {"avx2", Isa::avx2}, {"avx512", Isa::avx512}};
  constexpr std::pair<const char*, LinearPath> paths[] = {{"auto", LinearPath::automatic},
                                                          {"fma", LinearPath::fma},
                                                          {"dpbf16", LinearPath::dpbf16},
                                                          {"onednn", LinearPath::onednn}};
  const TuningKey keys[] = {
      {"isa", "scalar, avx2, avx512",
       [&](std::string_view v) { return tuning_enum(v, isas, t.isa); }},
      {"threads", "0 (the hardware thread count) to 4096",
       [&](std::string_view v) { return tuning_int(v, 0, 4096, t.threads); }},
      {"spin_us", "0 to 1000000 (microseconds)",
       [&](std::string_view v) { return tuning_int(v, 0, 1000000, t.spin_us); }},
      {"linear", "auto, fma, dpbf16, onednn",
       [&](std::string_view v) { return tuning_enum(v, paths, t.linear); }},
  };
  apply_tuning("TESSERA_CPU_TUNING", spec, keys);
  return t;
}

const CpuTuning& cpu_env_tuning() {
  static const CpuTuning t = [] {
    const char* e = std::getenv("TESSERA_CPU_TUNING");
    return parse_cpu_tuning(e ? e : "");
  }();
  return t;
}

namespace {

// The global pool's size and spin time come from this tuning (core reads no environment).
// Registered during static initialisation, before main() and so before any ThreadPool::global().
[[maybe_unused]] const bool g_pool_options = ThreadPool::set_global_options([] {
  const CpuTuning& t = cpu_env_tuning();
  return ThreadPool::Options{t.threads, t.spin_us};
});

}  // namespace

}  // namespace tessera::cpu
