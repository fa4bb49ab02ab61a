// The bandwidth-bound GEMV behind decode (M = 1..few rows): every thread streams its own rows
// of W once, R rows at a time (R independent streams, R x M accumulators), and applies each
// loaded weight to every x row while it is in registers. Templates over a Simd traits class
// (simd_avx512.h / simd_avx2.h); instantiated in simd_avx512.cpp and simd_avx2.cpp.
// Shapes: W [N, K] row-major (Hugging Face [out_features, in_features]), x [M, K], out [M, N].
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/simd_kernels.h"
#include "core/dtype.h"

namespace tessera::cpu::simd {

// Rows per block and x rows per group: R x MG accumulators plus R widened weights must fit the
// register file (32 zmm / 16 ymm).
template <class S>
constexpr int gemv_rows() { return S::W == 16 ? 4 : 2; }
constexpr int kGemvGroup = 4;

// How far ahead (in rows of W) the software prefetch runs: one block ahead covers the DRAM
// latency at the rate one core streams.
template <class S>
inline void prefetch_rows(const char* next_block, int64_t row_bytes, int rows, int64_t offset) {
  for (int r = 0; r < rows; ++r) _mm_prefetch(next_block + r * row_bytes + offset, _MM_HINT_T0);
}

// A template on S so that each ISA's translation unit has its own copy (no shared inline symbol
// compiled with another ISA's flags).
template <class S>
void store_out(const GemvArgs& a, int m, int64_t n, float v) {
  if (a.bias) v += a.bias[n];
  if (a.out_dtype == DType::f32) {
    static_cast<float*>(a.out)[m * a.out_stride + n] = v;
  } else {
    static_cast<uint16_t*>(a.out)[m * a.out_stride + n] = f32_to_bf16(v);
  }
}

// R rows of bf16 W starting at row n against MG x rows starting at m0. x is in the even/odd
// layout: x_e = x + m * x_stride, x_o = x_e + half.
template <class S, int R, int MG>
void gemv_bf16_block(const GemvArgs& a, int64_t n, int m0, bool pf) {
  using V = typename S::V;
  constexpr int W = S::W;
  const int64_t K = a.K;
  const uint16_t* w = static_cast<const uint16_t*>(a.w) + n * K;
  const float* x = static_cast<const float*>(a.x) + m0 * a.x_stride;
  const char* next = reinterpret_cast<const char*>(w + R * K);
  V acc[R][MG];
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < MG; ++m) acc[r][m] = S::zero();
  const int64_t full = K / (2 * W) * (2 * W);  // bf16 elements covered by whole vectors
  int64_t k = 0;
  for (; k < full; k += 2 * W) {
    if (pf && m0 == 0 && (k * 2) % 64 == 0) prefetch_rows<S>(next, K * 2, R, k * 2);
    V e[R], o[R];
    for (int r = 0; r < R; ++r) S::bf16_pairs(w + r * K + k, e[r], o[r]);
    for (int m = 0; m < MG; ++m) {
      const V xe = S::load(x + m * a.x_stride + k / 2);
      const V xo = S::load(x + m * a.x_stride + a.half + k / 2);
      for (int r = 0; r < R; ++r) {
        acc[r][m] = S::fmadd(e[r], xe, acc[r][m]);
        acc[r][m] = S::fmadd(o[r], xo, acc[r][m]);
      }
    }
  }
  if (k < K) {
    // The x layout is zero padded to `half`, so full x vectors are safe to read here.
    V e[R], o[R];
    for (int r = 0; r < R; ++r) S::bf16_pairs_partial(w + r * K + k, static_cast<int>(K - k), e[r], o[r]);
    for (int m = 0; m < MG; ++m) {
      const V xe = S::load(x + m * a.x_stride + k / 2);
      const V xo = S::load(x + m * a.x_stride + a.half + k / 2);
      for (int r = 0; r < R; ++r) {
        acc[r][m] = S::fmadd(e[r], xe, acc[r][m]);
        acc[r][m] = S::fmadd(o[r], xo, acc[r][m]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < MG; ++m) store_out<S>(a, m0 + m, n + r, S::reduce_add(acc[r][m]));
}

// The same over f32 W and plain f32 x rows.
template <class S, int R, int MG>
void gemv_f32_block(const GemvArgs& a, int64_t n, int m0, bool pf) {
  using V = typename S::V;
  constexpr int W = S::W;
  const int64_t K = a.K;
  const float* w = static_cast<const float*>(a.w) + n * K;
  const float* x = static_cast<const float*>(a.x) + m0 * a.x_stride;
  const char* next = reinterpret_cast<const char*>(w + R * K);
  V acc[R][MG];
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < MG; ++m) acc[r][m] = S::zero();
  const int64_t full = K / W * W;
  int64_t k = 0;
  for (; k < full; k += W) {
    if (pf && m0 == 0 && (k * 4) % 64 == 0) prefetch_rows<S>(next, K * 4, R, k * 4);
    V wv[R];
    for (int r = 0; r < R; ++r) wv[r] = S::load(w + r * K + k);
    for (int m = 0; m < MG; ++m) {
      const V xv = S::load(x + m * a.x_stride + k);
      for (int r = 0; r < R; ++r) acc[r][m] = S::fmadd(wv[r], xv, acc[r][m]);
    }
  }
  if (k < K) {
    const int rem = static_cast<int>(K - k);
    V wv[R];
    for (int r = 0; r < R; ++r) wv[r] = S::load_partial(w + r * K + k, rem);
    for (int m = 0; m < MG; ++m) {
      const V xv = S::load_partial(x + m * a.x_stride + k, rem);
      for (int r = 0; r < R; ++r) acc[r][m] = S::fmadd(wv[r], xv, acc[r][m]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < MG; ++m) store_out<S>(a, m0 + m, n + r, S::reduce_add(acc[r][m]));
}

// Calls Block<R, mg> for every x-row group; a W block stays in L1/L2 while the groups after the
// first reuse it.
template <class S, int R, template <class, int, int> class Block>
void gemv_rows(const GemvArgs& a, int64_t n, bool pf) {
  for (int m0 = 0; m0 < a.M; m0 += kGemvGroup) {
    switch (std::min(kGemvGroup, a.M - m0)) {
      case 1: Block<S, R, 1>::run(a, n, m0, pf); break;
      case 2: Block<S, R, 2>::run(a, n, m0, pf); break;
      case 3: Block<S, R, 3>::run(a, n, m0, pf); break;
      default: Block<S, R, 4>::run(a, n, m0, pf); break;
    }
  }
}

template <class S, int R, int MG>
struct Bf16Block {
  static void run(const GemvArgs& a, int64_t n, int m0, bool pf) {
    gemv_bf16_block<S, R, MG>(a, n, m0, pf);
  }
};
template <class S, int R, int MG>
struct F32Block {
  static void run(const GemvArgs& a, int64_t n, int m0, bool pf) {
    gemv_f32_block<S, R, MG>(a, n, m0, pf);
  }
};

template <class S, template <class, int, int> class Block>
void gemv_range(const GemvArgs& a, int64_t n0, int64_t n1) {
  constexpr int R = gemv_rows<S>();
  int64_t n = n0;
  // Prefetch the next block only while it is still in this range (the rows after it belong to
  // another thread's range).
  for (; n + R <= n1; n += R) gemv_rows<S, R, Block>(a, n, n + 2 * R <= n1);
  for (; n < n1; ++n) gemv_rows<S, 1, Block>(a, n, n + 2 <= n1);
}

template <class S>
void gemv_bf16(const GemvArgs& a, int64_t n0, int64_t n1) { gemv_range<S, Bf16Block>(a, n0, n1); }
template <class S>
void gemv_f32(const GemvArgs& a, int64_t n0, int64_t n1) { gemv_range<S, F32Block>(a, n0, n1); }

}  // namespace tessera::cpu::simd
