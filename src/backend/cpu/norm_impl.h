// RMSNorm rows on SIMD vectors (templates over simd_avx512.h / simd_avx2.h traits).
// ref: transformers Gemma3RMSNorm / LlamaRMSNorm: x * rsqrt(mean(x^2) + eps) * w in fp32 (the
// scalar reference in norm.cpp sums in double; fp32 lanes agree to float rounding).
#pragma once

#include <cmath>
#include <cstdint>

namespace tessera::cpu::simd {

template <class S>
float sum_squares(const float* x, int64_t n) {
  using V = typename S::V;
  constexpr int W = S::W;
  V a0 = S::zero(), a1 = S::zero();
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const V x0 = S::load(x + i), x1 = S::load(x + i + W);
    a0 = S::fmadd(x0, x0, a0);
    a1 = S::fmadd(x1, x1, a1);
  }
  for (; i < n; i += W) {
    const V x0 = n - i >= W ? S::load(x + i) : S::load_partial(x + i, static_cast<int>(n - i));
    a0 = S::fmadd(x0, x0, a0);
  }
  return S::reduce_add(S::add(a0, a1));
}

template <class S>
float rms_inverse(const float* x, int64_t n, float eps) {
  return 1.0f / std::sqrt(sum_squares<S>(x, n) / static_cast<float>(n) + eps);
}

// y = x * inv * w (y may alias x). With `add_to`, add_to += that instead of writing y.
template <class S>
void scale_by_weight(const float* x, float inv, const float* w, int64_t n, float* y) {
  using V = typename S::V;
  constexpr int W = S::W;
  const V iv = S::set1(inv);
  int64_t i = 0;
  for (; i + W <= n; i += W) S::store(y + i, S::mul(S::mul(S::load(x + i), iv), S::load(w + i)));
  if (i < n) {
    const int r = static_cast<int>(n - i);
    S::store_partial(y + i,
                     S::mul(S::mul(S::load_partial(x + i, r), iv), S::load_partial(w + i, r)), r);
  }
}

template <class S>
void rms_norm_row(const float* x, const float* w, float eps, int64_t n, float* y) {
  scale_by_weight<S>(x, rms_inverse<S>(x, n, eps), w, n, y);
}

// res += (w_y ? rms_norm(y, w_y) : y); then out = rms_norm(res, w_out) when w_out.
template <class S>
void add_rms_norm_row(float* res, const float* y, const float* w_y, const float* w_out, float eps,
                      int64_t n, float* out) {
  using V = typename S::V;
  constexpr int W = S::W;
  const float inv_y = w_y ? rms_inverse<S>(y, n, eps) : 1.f;
  const V iv = S::set1(inv_y);
  int64_t i = 0;
  for (; i < n; i += W) {
    const int r = static_cast<int>(n - i < W ? n - i : W);
    V yv = r == W ? S::load(y + i) : S::load_partial(y + i, r);
    if (w_y) yv = S::mul(S::mul(yv, iv), r == W ? S::load(w_y + i) : S::load_partial(w_y + i, r));
    const V sum = S::add(r == W ? S::load(res + i) : S::load_partial(res + i, r), yv);
    if (r == W) {
      S::store(res + i, sum);
    } else {
      S::store_partial(res + i, sum, r);
    }
  }
  if (w_out) rms_norm_row<S>(res, w_out, eps, n, out);
}

}  // namespace tessera::cpu::simd
