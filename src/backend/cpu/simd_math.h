// exp, expm1, tanh and GELU(tanh) on SIMD vectors, written against a Simd traits class
// (simd_avx512.h / simd_avx2.h), accurate to a few ulp so that the vector paths agree with the
// scalar reference (std::exp / std::tanh) within float rounding.
#pragma once

namespace tessera::cpu::simd {

// e^x: x = n ln2 + r with |r| <= ln2 / 2 (Cody-Waite split of ln2), e^r by its degree-7 Taylor
// polynomial (truncation < 2e-9 relative), scaled by 2^n.
template <class S>
typename S::V exp(typename S::V x) {
  using V = typename S::V;
  const V n = S::round_int(S::mul(x, S::set1(1.4426950408889634f)));
  V r = S::fmadd(n, S::set1(-0.693145751953125f), x);  // ln2 high part (exact product)
  r = S::fmadd(n, S::set1(-1.4286068203094172e-06f), r);
  V p = S::set1(1.f / 5040);
  p = S::fmadd(p, r, S::set1(1.f / 720));
  p = S::fmadd(p, r, S::set1(1.f / 120));
  p = S::fmadd(p, r, S::set1(1.f / 24));
  p = S::fmadd(p, r, S::set1(1.f / 6));
  p = S::fmadd(p, r, S::set1(0.5f));
  p = S::fmadd(p, r, S::set1(1.f));
  p = S::fmadd(p, r, S::set1(1.f));
  return S::scale_pow2(p, n);
}

// e^x - 1 without cancellation near 0: 2^n (e^r - 1) + (2^n - 1), where e^r - 1 is a polynomial
// that starts with r (so n = 0 keeps full relative accuracy).
template <class S>
typename S::V expm1(typename S::V x) {
  using V = typename S::V;
  const V n = S::round_int(S::mul(x, S::set1(1.4426950408889634f)));
  V r = S::fmadd(n, S::set1(-0.693145751953125f), x);
  r = S::fmadd(n, S::set1(-1.4286068203094172e-06f), r);
  V p = S::set1(1.f / 40320);
  p = S::fmadd(p, r, S::set1(1.f / 5040));
  p = S::fmadd(p, r, S::set1(1.f / 720));
  p = S::fmadd(p, r, S::set1(1.f / 120));
  p = S::fmadd(p, r, S::set1(1.f / 24));
  p = S::fmadd(p, r, S::set1(1.f / 6));
  p = S::fmadd(p, r, S::set1(0.5f));
  p = S::mul(S::fmadd(p, r, S::set1(1.f)), r);  // e^r - 1
  const V t = S::scale_pow2(S::set1(1.f), n);   // 2^n
  return S::fmadd(t, p, S::sub(t, S::set1(1.f)));
}

// tanh(y) = expm1(2y) / (expm1(2y) + 2), on |y| with the sign restored (|y| > 9 gives 1).
template <class S>
typename S::V tanh(typename S::V y) {
  using V = typename S::V;
  const V a = S::min(S::abs(y), S::set1(9.f));
  const V e = expm1<S>(S::add(a, a));
  return S::copysign(S::div(e, S::add(e, S::set1(2.f))), y);
}

// t * sigmoid(t') written so that nothing overflows and the tails keep their relative accuracy:
// with u = e^(-|t'|) in (0, 1], sigmoid(t') = 1 / (1 + u) for t' >= 0 and u / (1 + u) below 0;
// the denominator is in [1, 2], so a reciprocal estimate plus one Newton step is exact to ~1 ulp.
template <class S>
typename S::V mul_sigmoid(typename S::V t, typename S::V arg) {
  using V = typename S::V;
  const V u = exp<S>(S::sub(S::zero(), S::abs(arg)));
  const V r = S::recip(S::add(S::set1(1.f), u));
  return S::mul(t, S::mul(r, S::select_neg(arg, u, S::set1(1.f))));
}

// GELU with the tanh approximation (transformers gelu_pytorch_tanh):
// 0.5 g (1 + tanh(z)) = g sigmoid(2z), z = sqrt(2/pi) (g + 0.044715 g^3); the second form
// has no cancellation for negative g.
template <class S>
typename S::V gelu_tanh(typename S::V g) {
  using V = typename S::V;
  const V g3 = S::mul(S::mul(g, g), g);
  const V z = S::mul(S::set1(0.7978845608028654f), S::fmadd(S::set1(0.044715f), g3, g));
  return mul_sigmoid<S>(g, S::add(z, z));
}

// SiLU: g sigmoid(g)
template <class S>
typename S::V silu(typename S::V g) {
  return mul_sigmoid<S>(g, g);
}

}  // namespace tessera::cpu::simd
