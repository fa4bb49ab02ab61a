// The SIMD kernel families instantiated for AVX-512 (compiled with the AVX-512 flags, see
// cmake/sources.cmake); called only when active_isa() is avx512.
// GCC 12 reports its own _mm512_undefined_* idiom (avx512fintrin.h) as uninitialised use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "backend/cpu/simd_avx512.h"

#define TS_SIMD_NS avx512
#include "backend/cpu/simd_kernels_body.h"
