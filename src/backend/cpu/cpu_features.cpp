// Run-time ISA selection for the CPU kernels.
#include <atomic>

#include "backend/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

Isa detect() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16"))
    return Isa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
  return Isa::scalar;
}

// The detected ISA capped by the tuning's (TESSERA_CPU_TUNING isa=).
Isa initial() {
  const Isa isa = detect(), cap = cpu_env_tuning().isa;
  return static_cast<int>(cap) < static_cast<int>(isa) ? cap : isa;
}

std::atomic<Isa>& active() {
  static std::atomic<Isa> a{initial()};
  return a;
}

}  // namespace

Isa detected_isa() {
  static Isa d = detect();
  return d;
}
Isa active_isa() {
  return active().load(std::memory_order_relaxed);
}
void set_cpu_isa(Isa isa) {
  if (static_cast<int>(isa) > static_cast<int>(detected_isa())) isa = detected_isa();
  active().store(isa, std::memory_order_relaxed);
}
const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return "scalar";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
  }
  return "?";
}

}  // namespace tessera::cpu
