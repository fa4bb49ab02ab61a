// Elementwise rows on SIMD vectors: the gated MLP activation, tanh softcapping and argmax.
// ref: transformers GELUTanh (gelu_pytorch_tanh), SiLU.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/backend.h"
#include "backend/cpu/simd_math.h"

namespace tessera::cpu::simd {

// Applies f to n floats of x (vectors, then one masked tail), writing y.
template <class S, class F>
void map_row(const float* x, int64_t n, float* y, F f) {
  constexpr int W = S::W;
  int64_t i = 0;
  for (; i + W <= n; i += W) S::store(y + i, f(S::load(x + i), i, W));
  if (i < n) {
    const int r = static_cast<int>(n - i);
    S::store_partial(y + i, f(S::load_partial(x + i, r), i, r), r);
  }
}

// out = act(gate) * up
template <class S>
void gated_act_row(const float* gate, const float* up, int64_t n, Activation act, float* out) {
  using V = typename S::V;
  auto up_at = [&](int64_t i, int r) {
    return r == S::W ? S::load(up + i) : S::load_partial(up + i, r);
  };
  if (act == Activation::gelu_tanh) {
    map_row<S>(gate, n, out,
               [&](V g, int64_t i, int r) { return S::mul(gelu_tanh<S>(g), up_at(i, r)); });
  } else {
    map_row<S>(gate, n, out,
               [&](V g, int64_t i, int r) { return S::mul(silu<S>(g), up_at(i, r)); });
  }
}

// x = tanh(x / cap) * cap
template <class S>
void softcap_row(float* x, int64_t n, float cap) {
  using V = typename S::V;
  const V c = S::set1(cap);
  map_row<S>(x, n, x, [&](V v, int64_t, int) { return S::mul(tanh<S>(S::div(v, c)), c); });
}

// dst = bf16(src), round to nearest even as f32_to_bf16 (core/dtype.h).
template <class S>
void round_to_bf16(const float* src, int64_t n, uint16_t* dst) {
  constexpr int W = S::W;
  int64_t i = 0;
  for (; i + W <= n; i += W) S::store_bf16(dst + i, S::load(src + i));
  if (i < n) {
    const int r = static_cast<int>(n - i);
    S::store_bf16_partial(dst + i, S::load_partial(src + i, r), r);
  }
}

// The index of the first maximum (NaN never wins, except at index 0 as in the scalar loop).
template <class S>
int64_t argmax(const float* x, int64_t n) {
  constexpr int W = S::W;
  if (n <= 0 || std::isnan(x[0])) return 0;
  if (n < 4 * W) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
      if (x[i] > x[best]) best = i;
    return best;
  }
  // Pass 1: the maximum value; pass 2: its first index (both stream the row from L1/L2).
  using V = typename S::V;
  V m0 = S::set1(x[0]), m1 = m0, m2 = m0, m3 = m0;  // max(new, m) drops a NaN `new`
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    m0 = S::max(S::load(x + i), m0);
    m1 = S::max(S::load(x + i + W), m1);
    m2 = S::max(S::load(x + i + 2 * W), m2);
    m3 = S::max(S::load(x + i + 3 * W), m3);
  }
  float best = S::reduce_max(S::max(S::max(m0, m1), S::max(m2, m3)));
  for (; i < n; ++i)
    if (x[i] > best) best = x[i];
  int64_t j = 0;
  for (; j + W <= n; j += W) {
    const int lane = S::first_equal(S::load(x + j), best);
    if (lane >= 0) return j + lane;
  }
  for (; j < n; ++j)
    if (x[j] == best) return j;
  return 0;
}

}  // namespace tessera::cpu::simd
