// The quantized GEMV and panel dequantization with AVX-512 (quant_weight.h). Each 64-byte word
// row of a block holds 16 output rows' words; one element of each is shifted to the low bits and
// turned into 16 floats (4-bit: vpermps over the table 0..15, which reads only the low 4 bits of
// each index; 8-bit: mask and convert), then multiplied with one broadcast x[k]. Per group:
// out += scale * sum_k x[k] q[k] + bias * sum_k x[k] (the Σx identity: the bias costs one FMA
// per group, not one per element). ref: mlx/backend/cpu/quantized.cpp _qmm (same identity).
#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/quant_weight.h"

namespace tessera::cpu::avx512 {
namespace {

// Sixteen scales (or biases) from their stored dtype: bf16, f16 or f32.
inline __m512 load_scales(const uint8_t* p, DType dt) {
  if (dt == DType::bf16)
    return _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
  if (dt == DType::f16)
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_loadu_ps(reinterpret_cast<const float*>(p));
}

// The group's biases: stored, or bias_per_scale * scale (symmetric types, quant_weight.h).
inline __m512 load_biases(const CpuQuantWeight& w, const uint8_t* sc, __m512 s) {
  if (!w.has_biases) return _mm512_mul_ps(s, _mm512_set1_ps(w.bias_per_scale));
  return load_scales(sc + 16 * w.scale_size(), w.scale_dtype);
}

// Element e (0 <= e < 32 / SB) of each of the 16 words in v, as floats.
template <int SB>
inline __m512 element(__m512i v, int e) {
  const __m512i s = e == 0 ? v : _mm512_srli_epi32(v, static_cast<unsigned>(e * SB));
  if constexpr (SB == 4) {
    const __m512 table = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return _mm512_permutexvar_ps(s, table);
  } else {
    return _mm512_cvtepi32_ps(_mm512_and_si512(s, _mm512_set1_epi32(0xff)));
  }
}

// Rows [m0, m0 + MR) of x against panels [p0, p1). kC partial sums per row (element e % kC):
// at least 8 FMA chains in flight for 4-bit weights (FMA latency 4 at 2 per cycle), 4 per row
// for 8-bit (one per element of a word).
template <int MR, int SB>
void gemv_tile(const QuantGemvArgs& a, int m0, int64_t p0, int64_t p1) {
  const CpuQuantWeight& w = *a.w;
  constexpr int kPer = 32 / SB, kC = MR == 1 && SB == 4 ? 8 : 4;
  const int gs = w.quant.group_size;
  const int64_t N = w.rows;
  const DType sdt = w.scale_dtype;
  for (int64_t p = p0; p < p1; ++p) {
    __m512 acc[MR];
    for (int m = 0; m < MR; ++m) acc[m] = _mm512_setzero_ps();
    for (int64_t g = 0; g < w.groups; ++g) {
      const uint8_t* blk = w.block(p, g);
      _mm_prefetch(reinterpret_cast<const char*>(blk) + 2048, _MM_HINT_T0);
      __m512 qa[MR][kC];
      for (int m = 0; m < MR; ++m)
        for (int c = 0; c < kC; ++c) qa[m][c] = _mm512_setzero_ps();
      const float* xg = a.x + m0 * a.x_stride + g * gs;
      for (int64_t c = 0; c < w.words_per_group; ++c) {
        const __m512i v = _mm512_loadu_si512(blk + c * 64);
        const float* xc = xg + c * kPer;
#pragma GCC unroll 8
        for (int e = 0; e < kPer; ++e) {
          const __m512 q = element<SB>(v, e);
          for (int m = 0; m < MR; ++m)
            qa[m][e % kC] =
                _mm512_fmadd_ps(q, _mm512_set1_ps(xc[m * a.x_stride + e]), qa[m][e % kC]);
        }
      }
      const uint8_t* sc = blk + w.words_per_group * 64;
      const __m512 s = load_scales(sc, sdt), b = load_biases(w, sc, s);
      for (int m = 0; m < MR; ++m) {
        __m512 dot = qa[m][0];
        for (int c = 1; c < kC; ++c) dot = _mm512_add_ps(dot, qa[m][c]);
        acc[m] = _mm512_fmadd_ps(s, dot, acc[m]);
        acc[m] = _mm512_fmadd_ps(b, _mm512_set1_ps(a.xsum[(m0 + m) * w.groups + g]), acc[m]);
      }
    }
    const int64_t n0 = p * kPanel;
    const int rows = static_cast<int>(std::min<int64_t>(kPanel, N - n0));
    const __mmask16 k = static_cast<__mmask16>((1u << rows) - 1u);
    for (int m = 0; m < MR; ++m) {
      __m512 r = acc[m];
      if (a.bias) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(k, a.bias + n0));
      _mm512_mask_storeu_ps(a.out + (m0 + m) * a.out_stride + n0, k, r);
    }
  }
}

template <int SB>
void gemv(const QuantGemvArgs& a, int64_t p0, int64_t p1) {
  int m = 0;
  for (; m + 4 <= a.M; m += 4) gemv_tile<4, SB>(a, m, p0, p1);
  if (a.M - m >= 2) {
    gemv_tile<2, SB>(a, m, p0, p1);
    m += 2;
  }
  if (a.M - m == 1) gemv_tile<1, SB>(a, m, p0, p1);
}

template <int SB>
void dequant(const CpuQuantWeight& w, int64_t p0, int64_t np, float* dst) {
  constexpr int kPer = 32 / SB;
  const int gs = w.quant.group_size;
  for (int64_t i = 0; i < np; ++i) {
    float* panel = dst + i * kPanel * w.cols;
    for (int64_t g = 0; g < w.groups; ++g) {
      const uint8_t* blk = w.block(p0 + i, g);
      const uint8_t* sc = blk + w.words_per_group * 64;
      const __m512 s = load_scales(sc, w.scale_dtype), b = load_biases(w, sc, s);
      float* out = panel + g * gs * kPanel;
      for (int64_t c = 0; c < w.words_per_group; ++c) {
        const __m512i v = _mm512_loadu_si512(blk + c * 64);
#pragma GCC unroll 8
        for (int e = 0; e < kPer; ++e)
          _mm512_storeu_ps(out + (c * kPer + e) * kPanel, _mm512_fmadd_ps(s, element<SB>(v, e), b));
      }
    }
  }
}

}  // namespace

void quant_gemv(const QuantGemvArgs& a, int64_t p0, int64_t p1) {
  if (a.w->sb == 4) {
    gemv<4>(a, p0, p1);
  } else {
    gemv<8>(a, p0, p1);
  }
}

void quant_dequant_panels(const CpuQuantWeight& w, int64_t p0, int64_t np, float* dst) {
  if (w.sb == 4) {
    dequant<4>(w, p0, np, dst);
  } else {
    dequant<8>(w, p0, np, dst);
  }
}

}  // namespace tessera::cpu::avx512
