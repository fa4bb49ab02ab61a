// The AVX-512 vector traits the SIMD kernel templates (*_impl.h) are written against: 16 f32
// lanes, masked tails, bf16 <-> f32 conversions and exp/expm1. Only include this from files named
// *_avx512.cpp (they are compiled with the AVX-512 flags) and only call into them after the
// run-time check in cpu_features.cpp.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace tessera::cpu::avx512 {

struct Simd {
  using V = __m512;
  static constexpr int W = 16;  // f32 lanes
  static constexpr bool kHasDpbf16 = true;

  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static __mmask16 mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  // n < W lanes; the rest read as 0 (and are never touched in memory).
  static V load_partial(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store_partial(float* p, V v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }

  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  // 1 / b to ~1 ulp: the 14-bit estimate and one Newton step (a division costs ~8x more).
  static V recip(V b) {
    const V r = _mm512_rcp14_ps(b);
    return _mm512_mul_ps(r, _mm512_fnmadd_ps(b, r, _mm512_set1_ps(2.f)));
  }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }  // a * b + c
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V abs(V a) { return _mm512_abs_ps(a); }
  // a with the sign of s: bitwise m ? s : a (ternary-logic table 0xD8)
  static V copysign(V a, V s) {
    const __m512i m = _mm512_set1_epi32(0x80000000);
    return _mm512_castsi512_ps(
        _mm512_ternarylogic_epi32(_mm512_castps_si512(a), _mm512_castps_si512(s), m, 0xD8));
  }
  // Per lane: a where s has its sign bit set, else b.
  static V select_neg(V s, V a, V b) {
    const __mmask16 neg = _mm512_movepi32_mask(_mm512_castps_si512(s));
    return _mm512_mask_blend_ps(neg, b, a);
  }
  // The first lane equal to x, or -1.
  static int first_equal(V v, float x) {
    const unsigned m = _mm512_cmpeq_ps_mask(v, _mm512_set1_ps(x));
    return m ? __builtin_ctz(m) : -1;
  }
  static float reduce_add(V v) { return _mm512_reduce_add_ps(v); }
  static float reduce_max(V v) { return _mm512_reduce_max_ps(v); }

  // 2W bf16 values at p (pairs) as two f32 vectors: even = p[0, 2, 4, ...], odd = p[1, 3, ...].
  // Exact (bf16 -> f32 is a shift), two integer ops per 64 bytes.
  static void bf16_pairs(const uint16_t* p, V& even, V& odd) {
    const __m512i w = _mm512_loadu_si512(p);
    even = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    odd =
        _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
  }
  // n < 2W bf16 values; missing ones read as 0.
  static void bf16_pairs_partial(const uint16_t* p, int n, V& even, V& odd) {
    const __mmask32 m = static_cast<__mmask32>((n >= 32 ? 0xffffffffull : ((1ull << n) - 1ull)));
    const __m512i w = _mm512_maskz_loadu_epi16(m, p);
    even = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    odd =
        _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
  }
  // W bf16 values in order.
  static V load_bf16(const uint16_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static V load_bf16_partial(const uint16_t* p, int n) {
    const __m256i h = _mm256_maskz_loadu_epi16(mask(n), p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  // Round to nearest even as f32_to_bf16 (core/dtype.h) does, NaN kept quiet.
  static __m256i to_bf16(V v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(
        _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
  }
  static void store_bf16(uint16_t* p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), to_bf16(v));
  }
  static void store_bf16_partial(uint16_t* p, V v, int n) {
    _mm256_mask_storeu_epi16(p, mask(n), to_bf16(v));
  }

  // x * 2^n for integral-valued n; saturates to 0 / inf like ldexp.
  static V scale_pow2(V x, V n) { return _mm512_scalef_ps(x, n); }
  static V round_int(V x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
};

}  // namespace tessera::cpu::avx512
