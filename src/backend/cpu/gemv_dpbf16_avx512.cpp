// GEMV over bf16 weights with AVX512_BF16 vdpbf16ps: x is rounded to bf16 (as a bf16 model in
// transformers computes it) and each instruction does 32 bf16 products with fp32 accumulation.
// Measured on the dev machine (bench/NOTES-cpu.md): vdpbf16ps issues at about half the rate of
// fp32 FMA there, so linear.cpp uses this path only where the benchmark says it wins.
// Shapes: W [N, K] bf16, x [M, x_stride] bf16 (zero padded to a multiple of 32), out [M, N].
// GCC 12 reports its own _mm512_undefined_* idiom (avx512fintrin.h) as uninitialised use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/simd_kernels.h"
#include "core/dtype.h"

namespace tessera::cpu::avx512 {
namespace {

template <int R, int MG>
void block(const GemvArgs& a, int64_t n, int m0, bool pf) {
  const int64_t K = a.K;
  const uint16_t* w = static_cast<const uint16_t*>(a.w) + n * K;
  const uint16_t* x = static_cast<const uint16_t*>(a.x) + m0 * a.x_stride;
  const char* next = reinterpret_cast<const char*>(w + R * K);
  __m512 acc[R][MG];
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < MG; ++m) acc[r][m] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    if (pf && m0 == 0)
      for (int r = 0; r < R; ++r) _mm_prefetch(next + (r * K + k) * 2, _MM_HINT_T0);
    __m512i wv[R];
    for (int r = 0; r < R; ++r) wv[r] = _mm512_loadu_si512(w + r * K + k);
    for (int m = 0; m < MG; ++m) {
      const __m512bh xv = (__m512bh)_mm512_loadu_si512(x + m * a.x_stride + k);
      for (int r = 0; r < R; ++r) acc[r][m] = _mm512_dpbf16_ps(acc[r][m], (__m512bh)wv[r], xv);
    }
  }
  if (k < K) {
    const __mmask32 mask = static_cast<__mmask32>((1ull << (K - k)) - 1ull);
    __m512i wv[R];
    for (int r = 0; r < R; ++r) wv[r] = _mm512_maskz_loadu_epi16(mask, w + r * K + k);
    for (int m = 0; m < MG; ++m) {
      const __m512bh xv = (__m512bh)_mm512_loadu_si512(x + m * a.x_stride + k);
      for (int r = 0; r < R; ++r) acc[r][m] = _mm512_dpbf16_ps(acc[r][m], (__m512bh)wv[r], xv);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int m = 0; m < MG; ++m) {
      float v = _mm512_reduce_add_ps(acc[r][m]);
      if (a.bias) v += a.bias[n + r];
      const int64_t o = (m0 + m) * a.out_stride + n + r;
      if (a.out_dtype == DType::f32) {
        static_cast<float*>(a.out)[o] = v;
      } else {
        static_cast<uint16_t*>(a.out)[o] = f32_to_bf16(v);
      }
    }
  }
}

template <int R>
void rows(const GemvArgs& a, int64_t n, bool pf) {
  for (int m0 = 0; m0 < a.M; m0 += 4) {
    switch (std::min(4, a.M - m0)) {
      case 1: block<R, 1>(a, n, m0, pf); break;
      case 2: block<R, 2>(a, n, m0, pf); break;
      case 3: block<R, 3>(a, n, m0, pf); break;
      default: block<R, 4>(a, n, m0, pf); break;
    }
  }
}

}  // namespace

void gemv_dpbf16(const GemvArgs& a, int64_t n0, int64_t n1) {
  int64_t n = n0;
  for (; n + 4 <= n1; n += 4) rows<4>(a, n, n + 8 <= n1);
  for (; n < n1; ++n) rows<1>(a, n, n + 2 <= n1);
}

}  // namespace tessera::cpu::avx512
