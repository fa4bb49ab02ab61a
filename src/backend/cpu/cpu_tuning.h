// The CPU backend's tuning: what a user or a benchmark may vary, parsed once per process from
// TESSERA_CPU_TUNING (README "Tuning"), e.g. TESSERA_CPU_TUNING="isa=avx2,threads=4". Everything
// else the kernels choose is fixed in the code, by ISA and shape, where bench/NOTES-cpu.md
// measured it best. The tests and benchmarks override the ISA and the linear path at run time
// (set_cpu_isa, set_linear_path in cpu_kernels.h); the pool's size and spin time are fixed when
// the pool starts.
#pragma once

#include <string_view>

namespace tessera::cpu {

enum class Isa { scalar, avx2, avx512 };

// How linear() computes on the SIMD ISAs (the scalar ISA always runs the reference loop):
//  - fma: the panel kernel (panel_impl.h), fp32 FMA on weights widened in registers, exact for
//    bf16 weights; bandwidth-bound GEMV at decode, register-tiled GEMM at prefill;
//  - dpbf16: the panel kernel with vdpbf16ps, x rounded to bf16 (bf16 weights on AVX-512 only;
//    anything else falls back to fma);
//  - onednn: oneDNN sgemm over panels widened to f32 tiles (gemm_dnnl.cpp);
//  - automatic: what bench/cpu_bench measured fastest on the dev machine for the shape (fma).
// dpbf16 and onednn lost to fma there (bench/NOTES-cpu.md steps 3-5) and stay as kernel choices
// for comparison on other CPUs (cpu_bench_ops) and for the tests.
enum class LinearPath { automatic, fma, dpbf16, onednn };

struct CpuTuning {
  // isa: the highest instruction set the kernels use (scalar < avx2 < avx512), capped at what the
  // CPU supports; the default is the CPU's best. For testing and comparison.
  Isa isa = Isa::avx512;
  // threads: the pool's thread count (ThreadPool::global(), which every CPU kernel and the host
  // side of weight loading split their work over); 0: the hardware thread count. A user sharing
  // the machine with other work gives fewer.
  int threads = 0;
  // spin_us: how long an idle pool worker spins before it sleeps on a futex. A real user knob,
  // as OpenMP's wait policy is: spinning keeps the next region's dispatch at ~100 ns during
  // decode, but burns the cores the workers hold for that long after every region, which a
  // machine shared with other processes (or a laptop on battery) may want back sooner (0: sleep
  // at once, each region then pays a futex wake-up, a few us).
  int spin_us = 200;
  LinearPath linear = LinearPath::automatic;  // linear=auto|fma|dpbf16|onednn
};

// `spec` as TESSERA_CPU_TUNING holds it ("key=value,..."; empty: the defaults). Throws
// Error(invalid_argument) naming the variable, the key and its allowed values for an unknown key
// or value.
CpuTuning parse_cpu_tuning(std::string_view spec);
// TESSERA_CPU_TUNING parsed at the first call (the defaults when unset); throws as
// parse_cpu_tuning, at every call while the variable is malformed.
const CpuTuning& cpu_env_tuning();

}  // namespace tessera::cpu
