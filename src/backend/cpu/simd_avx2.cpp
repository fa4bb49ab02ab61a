// The SIMD kernel families instantiated for AVX2 + FMA (compiled with -mavx2 -mfma, see
// cmake/sources.cmake); called only when active_isa() is avx2 or better.
#include "backend/cpu/simd_avx2.h"

#define TS_SIMD_NS avx2
#include "backend/cpu/simd_kernels_body.h"
