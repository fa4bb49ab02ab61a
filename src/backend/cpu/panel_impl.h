// linear() on the panel layout (cpu_kernels.h, CpuWeight): out[M, N] = x[M, K] W[N, K]^T, one
// register-tiled kernel for every M. A block is MR rows of x times NP panels (16 output features
// each); for every pair of k it widens each panel's 64-byte line to f32 in registers (one shift,
// one mask: exact) and does 2 MR NP fp32 FMAs against broadcast x values, so
//  - decode (M = 1, 2) streams W once at memory speed, NP panels = NP independent streams, with
//    software prefetch a few lines ahead in each;
//  - prefill (M large) runs MR = 12 rows by 2 panels (AVX-512; 24 accumulators), the panels
//    staying in L2 while every row tile passes over them: FMA-bound.
// Templates over a Simd traits class; instantiated in simd_avx512.cpp and simd_avx2.cpp.
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/simd_kernels.h"
#include "backend/cpu/simd_math.h"

namespace tessera::cpu::simd {

template <class S>
struct PanelTile {
  static constexpr int VP = 16 / S::W;                  // vectors per 16 outputs
  static constexpr int kMaxRows = S::W == 16 ? 12 : 4;  // MR for big M
  static constexpr int kBigPanels = S::W == 16 ? 2 : 1;
  static constexpr int kSmallRows = S::W == 16 ? 2 : 1;  // M up to this streams more panels
  static constexpr int kSmallPanels = S::W == 16 ? 4 : 2;
};

// The pairs of k one block call covers. A long K is cut in blocks (kKBlockPairs) so that a block
// of x is reused across a thread's panels before the next; the partial sums wait in `out`
// between blocks (first: start from zero; last: add the bias).
struct KBlock {
  int64_t kp0 = 0, kp1 = 0;
  bool first = true, last = true;
};

// Stores acc (one vector: outputs n .. n + W of row m), clipped to N.
template <class S>
void store_outputs(const LinArgs& a, const KBlock& kb, int m, int64_t n, typename S::V acc) {
  const int64_t valid = a.N - n;
  if (valid <= 0) return;
  float* o = a.out + m * a.out_stride + n;
  if (valid >= S::W) {
    if (kb.last && a.bias) acc = S::add(acc, S::load(a.bias + n));
    S::store(o, acc);
  } else {
    const int r = static_cast<int>(valid);
    if (kb.last && a.bias) acc = S::add(acc, S::load_partial(a.bias + n, r));
    S::store_partial(o, acc, r);
  }
}

// The partial sums a previous block stored (zero on the first block or past N).
template <class S>
typename S::V load_outputs(const LinArgs& a, const KBlock& kb, int m, int64_t n) {
  const int64_t valid = a.N - n;
  if (kb.first || valid <= 0) return S::zero();
  const float* o = a.out + m * a.out_stride + n;
  return valid >= S::W ? S::load(o) : S::load_partial(o, static_cast<int>(valid));
}

// Row tiles [t0, t1) of x [M, stride] into the packed layout (LinArgs::xp, tiles of kMaxRows).
template <class S>
void pack_x(const float* x, int64_t stride, int M, int64_t K, int t0, int t1, float* dst) {
  constexpr int MR = PanelTile<S>::kMaxRows;
  const int64_t pairs = (K + 1) / 2;
  for (int m0 = t0 * MR; m0 < std::min(M, t1 * MR); m0 += MR) {
    const int mr = std::min(MR, M - m0);
    float* t = dst + int64_t{m0} * 2 * pairs;
    // Whole pairs as 8-byte moves, 64 pairs of every row at a time so that the tile's lines
    // being filled stay in L1; then the odd k with its zero.
    const int64_t whole = K / 2;
    for (int64_t b = 0; b < whole; b += 64) {
      const int64_t e = std::min(whole, b + 64);
      for (int m = 0; m < mr; ++m) {
        const float* row = x + (m0 + m) * stride;
        for (int64_t kp = b; kp < e; ++kp) std::memcpy(t + kp * 2 * mr + 2 * m, row + 2 * kp, 8);
      }
    }
    if (K % 2)
      for (int m = 0; m < mr; ++m) {
        t[whole * 2 * mr + 2 * m] = x[(m0 + m) * stride + K - 1];
        t[whole * 2 * mr + 2 * m + 1] = 0.f;
      }
  }
}

// Gated blocks (a.up_panels > 0, NP = 2, one K block): out = act(gate + b) * (up + b') for the
// 16 columns of gate panel p, the gate sums in acc[m][0], the up sums in acc[m][1].
template <class S, int MR, int NP>
void store_gated(const LinArgs& a, int64_t p, int m0, typename S::V (&acc)[MR][NP][16 / S::W]) {
  using V = typename S::V;
  constexpr int W = S::W, VP = PanelTile<S>::VP;
  static_assert(NP == 2);
  for (int m = 0; m < MR; ++m)
    for (int v = 0; v < VP; ++v) {
      const int64_t n = p * kPanel + v * W, valid = a.N - n;
      if (valid <= 0) continue;
      const int r = valid >= W ? W : static_cast<int>(valid);
      V g = acc[m][0][v], u = acc[m][1][v];
      if (a.bias) {
        g = S::add(g, r == W ? S::load(a.bias + n) : S::load_partial(a.bias + n, r));
        const float* bu = a.bias + a.up_panels * kPanel + n;
        u = S::add(u, r == W ? S::load(bu) : S::load_partial(bu, r));
      }
      const V y = S::mul(a.act == Activation::gelu_tanh ? gelu_tanh<S>(g) : silu<S>(g), u);
      float* o = a.out + (m0 + m) * a.out_stride + n;
      if (r == W) {
        S::store(o, y);
      } else {
        S::store_partial(o, y, r);
      }
    }
}

// MR rows (from m0) x NP panels (from panel p), bf16 weights. Gated: the second panel is the up
// panel paired with p.
template <class S, int MR, int NP>
void block_bf16(const LinArgs& a, const KBlock& kb, int64_t p, int m0, bool pf) {
  using V = typename S::V;
  constexpr int W = S::W, VP = PanelTile<S>::VP;
  const uint16_t* wp = static_cast<const uint16_t*>(a.w) + p * a.panel_elems;
  // Panel q's elements start at wp + q * stride (the next panel, or the paired up panel).
  const int64_t stride = a.up_panels > 0 ? a.up_panels * a.panel_elems : a.panel_elems;
  V acc[MR][NP][VP];
  for (int m = 0; m < MR; ++m)
    for (int q = 0; q < NP; ++q)
      for (int v = 0; v < VP; ++v)
        acc[m][q][v] = load_outputs<S>(a, kb, m0 + m, (p + q) * kPanel + v * W);
  // x0(m), x1(m): the pair's two x values of row m.
  auto step = [&](int64_t kp, auto x0, auto x1) {
    V e[NP][VP], o[NP][VP];
    for (int q = 0; q < NP; ++q) {
      const uint16_t* line = wp + q * stride + kp * 2 * kPanel;
      if (pf) _mm_prefetch(reinterpret_cast<const char*>(line) + kPrefetchBytes, _MM_HINT_T0);
      for (int v = 0; v < VP; ++v) S::bf16_pairs(line + v * 2 * W, e[q][v], o[q][v]);
    }
    for (int m = 0; m < MR; ++m) {
      const V xe = S::set1(x0(m)), xo = S::set1(x1(m));
      for (int q = 0; q < NP; ++q)
        for (int v = 0; v < VP; ++v) {
          acc[m][q][v] = S::fmadd(e[q][v], xe, acc[m][q][v]);
          acc[m][q][v] = S::fmadd(o[q][v], xo, acc[m][q][v]);
        }
    }
  };
  const int64_t pairs = (a.K + 1) / 2;
  if (a.xp) {
    // Packed: one pointer, constant offsets (no per-row address registers).
    const float* t = a.xp + int64_t{m0} * 2 * pairs + kb.kp0 * 2 * MR;
    for (int64_t kp = kb.kp0; kp < kb.kp1; ++kp, t += 2 * MR)
      step(
          kp, [&](int m) { return t[2 * m]; }, [&](int m) { return t[2 * m + 1]; });
  } else {
    const float* x = a.x + m0 * a.x_stride;
    const int64_t whole = std::min(kb.kp1, a.K / 2);
    for (int64_t kp = kb.kp0; kp < whole; ++kp)
      step(
          kp, [&](int m) { return x[m * a.x_stride + 2 * kp]; },
          [&](int m) { return x[m * a.x_stride + 2 * kp + 1]; });
    if (whole < kb.kp1)  // the last k of an odd K pairs with the zero padding of W
      step(
          whole, [&](int m) { return x[m * a.x_stride + 2 * whole]; }, [](int) { return 0.f; });
  }
  if constexpr (NP == 2) {
    if (a.up_panels > 0) {
      store_gated<S, MR, NP>(a, p, m0, acc);
      return;
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int q = 0; q < NP; ++q)
      for (int v = 0; v < VP; ++v)
        store_outputs<S>(a, kb, m0 + m, (p + q) * kPanel + v * W, acc[m][q][v]);
}

// The same over f32 panels ([K][16] each), gated too (quantized weights dequantized to f32).
template <class S, int MR, int NP>
void block_f32(const LinArgs& a, const KBlock& kb, int64_t p, int m0, bool pf) {
  using V = typename S::V;
  constexpr int W = S::W, VP = PanelTile<S>::VP;
  const float* wp = static_cast<const float*>(a.w) + p * a.panel_elems;
  // Panel q's elements start at wp + q * stride (the next panel, or the paired up panel).
  const int64_t stride = a.up_panels > 0 ? a.up_panels * a.panel_elems : a.panel_elems;
  V acc[MR][NP][VP];
  for (int m = 0; m < MR; ++m)
    for (int q = 0; q < NP; ++q)
      for (int v = 0; v < VP; ++v)
        acc[m][q][v] = load_outputs<S>(a, kb, m0 + m, (p + q) * kPanel + v * W);
  auto step = [&](int64_t k, auto xk_of) {
    V w[NP][VP];
    for (int q = 0; q < NP; ++q) {
      const float* line = wp + q * stride + k * kPanel;
      if (pf) _mm_prefetch(reinterpret_cast<const char*>(line) + kPrefetchBytes, _MM_HINT_T0);
      for (int v = 0; v < VP; ++v) w[q][v] = S::load(line + v * W);
    }
    for (int m = 0; m < MR; ++m) {
      const V xk = S::set1(xk_of(m));
      for (int q = 0; q < NP; ++q)
        for (int v = 0; v < VP; ++v) acc[m][q][v] = S::fmadd(w[q][v], xk, acc[m][q][v]);
    }
  };
  const int64_t k0 = 2 * kb.kp0, k1 = std::min(a.K, 2 * kb.kp1);
  if (a.xp) {
    const int64_t pairs = (a.K + 1) / 2;
    const float* t = a.xp + int64_t{m0} * 2 * pairs;
    for (int64_t k = k0; k < k1; ++k)
      step(k, [&](int m) { return t[(k / 2) * 2 * MR + 2 * m + (k % 2)]; });
  } else {
    const float* x = a.x + m0 * a.x_stride;
    for (int64_t k = k0; k < k1; ++k) step(k, [&](int m) { return x[m * a.x_stride + k]; });
  }
  if constexpr (NP == 2) {
    if (a.up_panels > 0) {
      store_gated<S, MR, NP>(a, p, m0, acc);
      return;
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int q = 0; q < NP; ++q)
      for (int v = 0; v < VP; ++v)
        store_outputs<S>(a, kb, m0 + m, (p + q) * kPanel + v * W, acc[m][q][v]);
}

template <class S, int NP, template <class, int, int> class Block>
void rows_of(const LinArgs& a, const KBlock& kb, int64_t p, int m0, int mr, bool pf) {
  switch (mr) {
#define TS_PANEL_CASE(R)                    \
  case R:                                   \
    Block<S, R, NP>::run(a, kb, p, m0, pf); \
    return;
    TS_PANEL_CASE(1)
    TS_PANEL_CASE(2)
    TS_PANEL_CASE(3)
    TS_PANEL_CASE(4)
#undef TS_PANEL_CASE
    default:
      break;
  }
  if constexpr (PanelTile<S>::kMaxRows > 4) {
    switch (mr) {
#define TS_PANEL_CASE(R)                    \
  case R:                                   \
    Block<S, R, NP>::run(a, kb, p, m0, pf); \
    return;
      TS_PANEL_CASE(5)
      TS_PANEL_CASE(6)
      TS_PANEL_CASE(7)
      TS_PANEL_CASE(8)
      TS_PANEL_CASE(9)
      TS_PANEL_CASE(10)
      TS_PANEL_CASE(11)
      TS_PANEL_CASE(12)
#undef TS_PANEL_CASE
      default:
        break;
    }
  }
}

// All M rows over NP panels from p: row tiles of kMaxRows; only the first pass prefetches (the
// panels are in L2 for the others).
template <class S, int NP, template <class, int, int> class Block>
void panel_group(const LinArgs& a, const KBlock& kb, int64_t p) {
  constexpr int MR = PanelTile<S>::kMaxRows;
  for (int m0 = 0; m0 < a.M; m0 += MR)
    rows_of<S, NP, Block>(a, kb, p, m0, std::min(MR, a.M - m0), m0 == 0);
}

// Pairs of k per K block with more than a few rows. Measured (bench/NOTES-cpu.md): blocks
// sized to keep x in L2 lose to long ones (each block sends every output through memory once
// more, and x streams well from L3); 1024 pairs (K = 2048) only splits the down projection.
constexpr int64_t kKBlockPairs = 1024;

template <class S, template <class, int, int> class Block>
void panels_range(const LinArgs& a, int64_t p0, int64_t p1) {
  using T = PanelTile<S>;
  const int64_t pairs = (a.K + 1) / 2;
  if (a.up_panels > 0) {  // gated: gate panels [p0, p1), each with its up panel, one K block
    KBlock kb;
    kb.kp1 = pairs;
    for (int64_t p = p0; p < p1; ++p) panel_group<S, 2, Block>(a, kb, p);
    return;
  }
  const int64_t kcp = a.k_block_pairs > 0    ? a.k_block_pairs
                      : a.M <= T::kSmallRows ? pairs
                                             : kKBlockPairs;
  for (int64_t kp0 = 0; kp0 < pairs; kp0 += kcp) {
    KBlock kb;
    kb.kp0 = kp0;
    kb.kp1 = std::min(pairs, kp0 + kcp);
    kb.first = kp0 == 0;
    kb.last = kb.kp1 == pairs;
    int64_t p = p0;
    if (a.M <= T::kSmallRows) {
      for (; p + T::kSmallPanels <= p1; p += T::kSmallPanels)
        panel_group<S, T::kSmallPanels, Block>(a, kb, p);
    } else {
      for (; p + T::kBigPanels <= p1; p += T::kBigPanels)
        panel_group<S, T::kBigPanels, Block>(a, kb, p);
    }
    for (; p < p1; ++p) panel_group<S, 1, Block>(a, kb, p);
  }
}

template <class S, int MR, int NP>
struct Bf16Block {
  static void run(const LinArgs& a, const KBlock& kb, int64_t p, int m0, bool pf) {
    block_bf16<S, MR, NP>(a, kb, p, m0, pf);
  }
};
template <class S, int MR, int NP>
struct F32Block {
  static void run(const LinArgs& a, const KBlock& kb, int64_t p, int m0, bool pf) {
    block_f32<S, MR, NP>(a, kb, p, m0, pf);
  }
};

template <class S>
void linear_panels(const LinArgs& a, int64_t p0, int64_t p1) {
  if (a.w_dtype == DType::bf16) {
    panels_range<S, Bf16Block>(a, p0, p1);
  } else {
    panels_range<S, F32Block>(a, p0, p1);
  }
}

// oneDNN's input: panels [p0, p0 + np) widened to f32 rows [K, ld] (ld >= 16 np), B in 'N' form.
template <class S>
void widen_panels(const LinArgs& a, int64_t p0, int np, float* dst, int64_t ld) {
  constexpr int W = S::W, VP = PanelTile<S>::VP;
  for (int q = 0; q < np; ++q) {
    float* d = dst + q * kPanel;
    if (a.w_dtype == DType::bf16) {
      const uint16_t* wp = static_cast<const uint16_t*>(a.w) + (p0 + q) * a.panel_elems;
      for (int64_t kp = 0; kp < (a.K + 1) / 2; ++kp)
        for (int v = 0; v < VP; ++v) {
          typename S::V e, o;
          S::bf16_pairs(wp + kp * 2 * kPanel + v * 2 * W, e, o);
          S::store(d + (2 * kp) * ld + v * W, e);
          if (2 * kp + 1 < a.K) S::store(d + (2 * kp + 1) * ld + v * W, o);
        }
    } else {
      const float* wp = static_cast<const float*>(a.w) + (p0 + q) * a.panel_elems;
      for (int64_t k = 0; k < a.K; ++k)
        for (int v = 0; v < VP; ++v) S::store(d + k * ld + v * W, S::load(wp + k * kPanel + v * W));
    }
  }
}

}  // namespace tessera::cpu::simd
