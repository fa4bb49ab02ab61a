// The quantized GEMV and panel dequantization with AVX2 (quant_weight.h): as the AVX-512 file,
// with each 16-row word row taken as two 8-lane halves and every element extracted and converted
// (AVX2 has no 16-entry float permute).
#include <immintrin.h>

#include <algorithm>
#include <utility>

#include "backend/cpu/quant_weight.h"

namespace tessera::cpu::avx2 {
namespace {

// Eight scales (or biases) from their stored dtype: bf16, f16 (F16C) or f32.
inline __m256 load_scales(const uint8_t* p, DType dt) {
  if (dt == DType::bf16)
    return _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
  if (dt == DType::f16)
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
}

// Half h's eight biases: stored, or bias_per_scale * scale (symmetric types, quant_weight.h).
inline __m256 load_biases(const CpuQuantWeight& w, const uint8_t* sc, int h, __m256 s) {
  if (!w.has_biases) return _mm256_mul_ps(s, _mm256_set1_ps(w.bias_per_scale));
  return load_scales(sc + (16 + 8 * h) * w.scale_size(), w.scale_dtype);
}

// The elements of 8 stored words (one per output row) as floats, one integer op each before
// the conversion: for 4 bits, element e is byte e / 2 of lo = v & 0x0F0F0F0F (even e) or of
// hi = (v >> 4) & 0x0F0F0F0F (odd e); for 8 bits byte e of v. A byte shuffle moves that byte to
// the low byte of each 32-bit lane and zeroes the rest; the first element is a mask and the last
// a shift. (Shift-and-mask for every element costs two ops; the conversions and FMAs are the same.)
template <int B>
inline __m256i byte_of_each_lane() {
  constexpr int z = static_cast<int>(0x80808000u);
  return _mm256_setr_epi32(z | B, z | (4 + B), z | (8 + B), z | (12 + B), z | B, z | (4 + B),
                           z | (8 + B), z | (12 + B));
}

template <int SB>
struct Words {
  __m256i v, lo, hi;
  explicit Words(const uint8_t* p) : v(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))) {
    if constexpr (SB == 4) {
      const __m256i m = _mm256_set1_epi32(0x0F0F0F0F);
      lo = _mm256_and_si256(v, m);
      hi = _mm256_and_si256(_mm256_srli_epi32(v, 4), m);
    }
  }
  template <int E>
  __m256 at() const {
    constexpr int kLast = 32 / SB - 1;
    if constexpr (E == 0)
      return _mm256_cvtepi32_ps(_mm256_and_si256(v, _mm256_set1_epi32((1 << SB) - 1)));
    else if constexpr (E == kLast)
      return _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 32 - SB));
    else if constexpr (SB == 8)
      return _mm256_cvtepi32_ps(_mm256_shuffle_epi8(v, byte_of_each_lane<E>()));
    else
      return _mm256_cvtepi32_ps(_mm256_shuffle_epi8(E & 1 ? hi : lo, byte_of_each_lane<E / 2>()));
  }
};

// The reference form of the same: element e of each of the 8 words.
template <int SB>
inline __m256 element(__m256i v, int e) {
  const __m256i s = e == 0 ? v : _mm256_srli_epi32(v, e * SB);
  return _mm256_cvtepi32_ps(_mm256_and_si256(s, _mm256_set1_epi32((1 << SB) - 1)));
}

// qa[m][e % kC] += element e * x[m][e] for the 32 / SB elements of one half's words.
template <int MR, int SB, int kC, int... E>
inline void fma_elements(const Words<SB>& wd, const float* xc, int64_t xs, __m256 (*qa)[kC],
                         std::integer_sequence<int, E...>) {
  (
      [&] {
        const __m256 q = wd.template at<E>();
        for (int m = 0; m < MR; ++m)
          qa[m][E % kC] = _mm256_fmadd_ps(q, _mm256_set1_ps(xc[m * xs + E]), qa[m][E % kC]);
      }(),
      ...);
}

// Rows [m0, m0 + MR) of x against panels [p0, p1). kC partial sums per half (element e % kC):
// 8 FMA chains in flight for any MR, which the FMA latency (4-5 cycles) needs at 2 per cycle.
template <int MR, int SB>
void gemv_tile(const QuantGemvArgs& a, int m0, int64_t p0, int64_t p1) {
  const CpuQuantWeight& w = *a.w;
  constexpr int kPer = 32 / SB, kC = MR == 1 ? 4 : 2;
  const int gs = w.quant.group_size;
  const int64_t N = w.rows;
  const DType sdt = w.scale_dtype;
  for (int64_t p = p0; p < p1; ++p) {
    __m256 acc[MR][2];
    for (int m = 0; m < MR; ++m) acc[m][0] = acc[m][1] = _mm256_setzero_ps();
    for (int64_t g = 0; g < w.groups; ++g) {
      const uint8_t* blk = w.block(p, g);
      _mm_prefetch(reinterpret_cast<const char*>(blk) + 2048, _MM_HINT_T0);
      __m256 qa[2][MR][kC];
      for (int h = 0; h < 2; ++h)
        for (int m = 0; m < MR; ++m)
          for (int c = 0; c < kC; ++c) qa[h][m][c] = _mm256_setzero_ps();
      const float* xg = a.x + m0 * a.x_stride + g * gs;
      for (int64_t c = 0; c < w.words_per_group; ++c)
        for (int h = 0; h < 2; ++h)
          fma_elements<MR, SB, kC>(Words<SB>(blk + c * 64 + 32 * h), xg + c * kPer, a.x_stride,
                                   qa[h], std::make_integer_sequence<int, kPer>());
      const uint8_t* sc = blk + w.words_per_group * 64;
      for (int h = 0; h < 2; ++h) {
        const __m256 s = load_scales(sc + 8 * h * w.scale_size(), sdt),
                     b = load_biases(w, sc, h, s);
        for (int m = 0; m < MR; ++m) {
          __m256 dot = qa[h][m][0];
          for (int c = 1; c < kC; ++c) dot = _mm256_add_ps(dot, qa[h][m][c]);
          acc[m][h] = _mm256_fmadd_ps(s, dot, acc[m][h]);
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
  const DType sdt = w.scale_dtype;
  for (int64_t i = 0; i < np; ++i) {
    float* panel = dst + i * kPanel * w.cols;
    for (int64_t g = 0; g < w.groups; ++g) {
      const uint8_t* blk = w.block(p0 + i, g);
      const uint8_t* sc = blk + w.words_per_group * 64;
      float* out = panel + g * gs * kPanel;
      for (int h = 0; h < 2; ++h) {
        const __m256 s = load_scales(sc + 8 * h * ss, sdt), b = load_biases(w, sc, h, s);
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
