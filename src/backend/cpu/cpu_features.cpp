// Run-time ISA selection for the CPU kernels.
#include <atomic>
#include <cstdlib>
#include <cstring>

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

Isa initial() {
  Isa isa = detect();
  // TESSERA_ISA=scalar|avx2|avx512 caps the path (for testing and comparison).
  if (const char* env = std::getenv("TESSERA_ISA")) {
    Isa want = std::strcmp(env, "scalar") == 0 ? Isa::scalar
               : std::strcmp(env, "avx2") == 0 ? Isa::avx2
                                               : Isa::avx512;
    if (static_cast<int>(want) < static_cast<int>(isa)) isa = want;
  }
  return isa;
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
