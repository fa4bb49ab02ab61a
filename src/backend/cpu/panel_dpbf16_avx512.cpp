// linear() on bf16 panels with AVX512_BF16 vdpbf16ps: x is rounded to bf16 (as a bf16 model in
// transformers computes it) and one instruction does a 64-byte panel line, i.e. 16 outputs x
// one pair of k, with fp32 accumulation. The panel layout (cpu_kernels.h) is vdpbf16ps's own
// operand layout. Measured on the dev machine (bench/NOTES-cpu.md), vdpbf16ps issues at about
// half the rate of fp32 FMA, so linear.cpp uses it only when forced (linear=dpbf16).
// GCC 12 reports its own _mm512_undefined_* idiom (avx512fintrin.h) as uninitialised use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/simd_kernels.h"

namespace tessera::cpu::avx512 {
namespace {

template <int MR, int NP>
void block(const LinArgs& a, int64_t p, int m0, bool pf) {
  const uint16_t* wp = static_cast<const uint16_t*>(a.w) + p * a.panel_elems;
  const uint32_t* x = a.x_pairs + m0 * a.x_pairs_stride;
  __m512 acc[MR][NP];
  for (int m = 0; m < MR; ++m)
    for (int q = 0; q < NP; ++q) acc[m][q] = _mm512_setzero_ps();
  const int64_t pairs = (a.K + 1) / 2;
  for (int64_t kp = 0; kp < pairs; ++kp) {
    __m512i w[NP];
    for (int q = 0; q < NP; ++q) {
      const uint16_t* line = wp + q * a.panel_elems + kp * 2 * kPanel;
      if (pf) _mm_prefetch(reinterpret_cast<const char*>(line) + kPrefetchBytes, _MM_HINT_T0);
      w[q] = _mm512_loadu_si512(line);
    }
    for (int m = 0; m < MR; ++m) {
      const __m512bh xv =
          (__m512bh)_mm512_set1_epi32(static_cast<int>(x[m * a.x_pairs_stride + kp]));
      for (int q = 0; q < NP; ++q) acc[m][q] = _mm512_dpbf16_ps(acc[m][q], (__m512bh)w[q], xv);
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int q = 0; q < NP; ++q) {
      const int64_t n = (p + q) * kPanel, valid = a.N - n;
      if (valid <= 0) continue;
      const __mmask16 mask = valid >= 16 ? 0xffff : static_cast<__mmask16>((1u << valid) - 1u);
      __m512 v = acc[m][q];
      if (a.bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, a.bias + n));
      _mm512_mask_storeu_ps(a.out + (m0 + m) * a.out_stride + n, mask, v);
    }
}

template <int NP>
void group(const LinArgs& a, int64_t p) {
  for (int m0 = 0; m0 < a.M; m0 += 8) {
    const bool pf = m0 == 0;
    switch (std::min(8, a.M - m0)) {
      case 1:
        block<1, NP>(a, p, m0, pf);
        break;
      case 2:
        block<2, NP>(a, p, m0, pf);
        break;
      case 3:
        block<3, NP>(a, p, m0, pf);
        break;
      case 4:
        block<4, NP>(a, p, m0, pf);
        break;
      case 5:
        block<5, NP>(a, p, m0, pf);
        break;
      case 6:
        block<6, NP>(a, p, m0, pf);
        break;
      case 7:
        block<7, NP>(a, p, m0, pf);
        break;
      default:
        block<8, NP>(a, p, m0, pf);
        break;
    }
  }
}

}  // namespace

void linear_panels_dpbf16(const LinArgs& a, int64_t p0, int64_t p1) {
  int64_t p = p0;
  for (; p + 3 <= p1; p += 3) group<3>(a, p);
  for (; p < p1; ++p) group<1>(a, p);
}

}  // namespace tessera::cpu::avx512
