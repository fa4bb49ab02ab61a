// The sampler's random numbers: one uniform in [0, 1) per (seed, step), counter-based so that a
// request's draws do not depend on what else runs in the batch, and so that the CPU and CUDA
// samplers draw the same number (this header is plain integer arithmetic, usable from .cu files).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TS_HOST_DEVICE __host__ __device__
#else
#define TS_HOST_DEVICE
#endif

namespace tessera {

TS_HOST_DEVICE inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// 53 random bits as a double in [0, 1).
TS_HOST_DEVICE inline double sample_uniform(uint64_t seed, uint64_t step) {
  uint64_t r = mix64(mix64(seed) ^ (step * 0xd1342543de82ef95ull + 0x2545f4914f6cdd1dull));
  return static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace tessera
