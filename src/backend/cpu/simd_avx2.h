// The AVX2 + FMA vector traits (8 f32 lanes) behind the *_impl.h kernel templates; the same
// interface as simd_avx512.h. Only include this from files named *_avx2.cpp.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tessera::cpu::avx2 {

struct Simd {
  using V = __m256;
  static constexpr int W = 8;
  static constexpr bool kHasDpbf16 = false;

  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V load_partial(const float* p, int n) { return _mm256_maskload_ps(p, mask(n)); }
  static void store_partial(float* p, V v, int n) { _mm256_maskstore_ps(p, mask(n), v); }

  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  // 1 / b to ~2 ulp: the 12-bit estimate and one Newton step.
  static V recip(V b) {
    const V r = _mm256_rcp_ps(b);
    return _mm256_mul_ps(r, _mm256_fnmadd_ps(b, r, _mm256_set1_ps(2.f)));
  }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V abs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  static V copysign(V a, V s) {
    const V m = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(m, a), _mm256_and_ps(m, s));
  }
  // Per lane: a where s has its sign bit set, else b.
  static V select_neg(V s, V a, V b) { return _mm256_blendv_ps(b, a, s); }
  // The first lane equal to x, or -1.
  static int first_equal(V v, float x) {
    const int m = _mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_set1_ps(x), _CMP_EQ_OQ));
    return m ? __builtin_ctz(static_cast<unsigned>(m)) : -1;
  }
  static float reduce_add(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float reduce_max(V v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  static void bf16_pairs(const uint16_t* p, V& even, V& odd) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    even = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    odd =
        _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
  }
  static void bf16_pairs_partial(const uint16_t* p, int n, V& even, V& odd) {
    alignas(32) uint16_t buf[16] = {};
    std::memcpy(buf, p, static_cast<size_t>(n) * 2);
    bf16_pairs(buf, even, odd);
  }
  static V load_bf16(const uint16_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static V load_bf16_partial(const uint16_t* p, int n) {
    alignas(16) uint16_t buf[8] = {};
    std::memcpy(buf, p, static_cast<size_t>(n) * 2);
    return load_bf16(buf);
  }
  // Round to nearest even as f32_to_bf16 does (NaN kept quiet); 8 results in the low 128 bits.
  static __m128i to_bf16(V v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
    const __m256i absu = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    const __m256i nan = _mm256_cmpgt_epi32(absu, _mm256_set1_epi32(0x7f800000));
    const __m256i qn = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    r = _mm256_blendv_epi8(r, qn, nan);
    // Pack 8 x u32 (all < 65536) to 8 x u16.
    const __m128i lo = _mm256_castsi256_si128(r), hi = _mm256_extracti128_si256(r, 1);
    return _mm_packus_epi32(lo, hi);
  }
  static void store_bf16(uint16_t* p, V v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), to_bf16(v));
  }
  static void store_bf16_partial(uint16_t* p, V v, int n) {
    alignas(16) uint16_t buf[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(buf), to_bf16(v));
    std::memcpy(p, buf, static_cast<size_t>(n) * 2);
  }

  // x * 2^n for integral-valued n in the normal exponent range; n is clamped to [-126, 127] in
  // two steps so that results down to 2^-252 and up to 2^254 come out right (beyond: 0 / inf).
  static V scale_pow2(V x, V n) {
    n = _mm256_max_ps(_mm256_min_ps(n, _mm256_set1_ps(254.f)), _mm256_set1_ps(-252.f));
    const V h = _mm256_round_ps(_mm256_mul_ps(n, _mm256_set1_ps(0.5f)),
                                _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const V n2 = _mm256_sub_ps(n, h);
    auto pow2 = [](V k) {
      const __m256i e =
          _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
      return _mm256_castsi256_ps(e);
    };
    return _mm256_mul_ps(_mm256_mul_ps(x, pow2(h)), pow2(n2));
  }
  static V round_int(V x) {
    return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
};

}  // namespace tessera::cpu::avx2
