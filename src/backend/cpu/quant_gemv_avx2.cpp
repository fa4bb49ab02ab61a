// The quantized GEMV and panel dequantization with AVX2 (quant_weight.h): as the AVX-512 file,
// with each 16-row word row taken as two 8-lane halves and every element masked and converted
// (AVX2 has no 16-entry float permute).
#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/quant_weight.h"

namespace tessera::cpu::avx2 {
namespace {

inline __m256 load_scales(const uint8_t* p, bool bf16) {
  if (bf16)
    return _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
  return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
}

template <int SB>
inline __m256 element(__m256i v, int e) {
  const __m256i s = e == 0 ? v : _mm256_srli_epi32(v, e * SB);
  return _mm256_cvtepi32_ps(_mm256_and_si256(s, _mm256_set1_epi32((1 << SB) - 1)));
}

// Rows [m0, m0 + MR) of x against panels [p0, p1); two partial sums per half (element e & 1).
template <int MR, int SB>
void gemv_tile(const QuantGemvArgs& a, int m0, int64_t p0, int64_t p1) {
  const CpuQuantWeight& w = *a.w;
  constexpr int kPer = 32 / SB;
  const int gs = w.quant.group_size;
  const int64_t N = w.rows;
  const bool bf16 = w.bf16_scales;
  for (int64_t p = p0; p < p1; ++p) {
    __m256 acc[MR][2];
    for (int m = 0; m < MR; ++m) acc[m][0] = acc[m][1] = _mm256_setzero_ps();
    for (int64_t g = 0; g < w.groups; ++g) {
      const uint8_t* blk = w.block(p, g);
      _mm_prefetch(reinterpret_cast<const char*>(blk) + 2048, _MM_HINT_T0);
      __m256 qa[MR][2][2];
      for (int m = 0; m < MR; ++m)
        for (int h = 0; h < 2; ++h) qa[m][h][0] = qa[m][h][1] = _mm256_setzero_ps();
      const float* xg = a.x + m0 * a.x_stride + g * gs;
      for (int64_t c = 0; c < w.words_per_group; ++c) {
        const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + c * 64));
        const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + c * 64 + 32));
        const float* xc = xg + c * kPer;
#pragma GCC unroll 8
        for (int e = 0; e < kPer; ++e) {
          const __m256 q0 = element<SB>(v0, e), q1 = element<SB>(v1, e);
          for (int m = 0; m < MR; ++m) {
            const __m256 xv = _mm256_set1_ps(xc[m * a.x_stride + e]);
            qa[m][0][e & 1] = _mm256_fmadd_ps(q0, xv, qa[m][0][e & 1]);
            qa[m][1][e & 1] = _mm256_fmadd_ps(q1, xv, qa[m][1][e & 1]);
          }
        }
      }
      const uint8_t* sc = blk + w.words_per_group * 64;
      const int ss = w.scale_size();
      for (int h = 0; h < 2; ++h) {
        const __m256 s = load_scales(sc + 8 * h * ss, bf16),
                     b = load_scales(sc + (16 + 8 * h) * ss, bf16);
        for (int m = 0; m < MR; ++m) {
          acc[m][h] = _mm256_fmadd_ps(s, _mm256_add_ps(qa[m][h][0], qa[m][h][1]), acc[m][h]);
          acc[m][h] =
              _mm256_fmadd_ps(b, _mm256_set1_ps(a.xsum[(m0 + m) * w.groups + g]), acc[m][h]);
        }
      }
    }
    const int64_t n0 = p * kPanel;
    const int rows = static_cast<int>(std::min<int64_t>(kPanel, N - n0));
    for (int m = 0; m < MR; ++m) {
      alignas(32) float r[16];
      _mm256_store_ps(r, acc[m][0]);
      _mm256_store_ps(r + 8, acc[m][1]);
      float* o = a.out + (m0 + m) * a.out_stride + n0;
      for (int j = 0; j < rows; ++j) o[j] = a.bias ? r[j] + a.bias[n0 + j] : r[j];
    }
  }
}

template <int SB>
void gemv(const QuantGemvArgs& a, int64_t p0, int64_t p1) {
  int m = 0;
  for (; m + 2 <= a.M; m += 2) gemv_tile<2, SB>(a, m, p0, p1);
  if (m < a.M) gemv_tile<1, SB>(a, m, p0, p1);
}

template <int SB>
void dequant(const CpuQuantWeight& w, int64_t p0, int64_t np, float* dst) {
  constexpr int kPer = 32 / SB;
  const int gs = w.quant.group_size;
  const int ss = w.scale_size();
  for (int64_t i = 0; i < np; ++i) {
    float* panel = dst + i * kPanel * w.cols;
    for (int64_t g = 0; g < w.groups; ++g) {
      const uint8_t* blk = w.block(p0 + i, g);
      const uint8_t* sc = blk + w.words_per_group * 64;
      float* out = panel + g * gs * kPanel;
      for (int h = 0; h < 2; ++h) {
        const __m256 s = load_scales(sc + 8 * h * ss, w.bf16_scales),
                     b = load_scales(sc + (16 + 8 * h) * ss, w.bf16_scales);
        for (int64_t c = 0; c < w.words_per_group; ++c) {
          const __m256i v =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + c * 64 + 32 * h));
#pragma GCC unroll 8
          for (int e = 0; e < kPer; ++e)
            _mm256_storeu_ps(out + (c * kPer + e) * kPanel + 8 * h,
                             _mm256_fmadd_ps(s, element<SB>(v, e), b));
        }
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

}  // namespace tessera::cpu::avx2
