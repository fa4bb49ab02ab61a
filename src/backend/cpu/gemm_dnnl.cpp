// The prefill path of linear(): out[M, N] = x[M, K] W[N, K]^T (+ bias) with oneDNN's sgemm, fp32
// throughout. On the dev machine (bench/NOTES-cpu.md) oneDNN's bf16 matmul runs at about half its
// f32 rate because vdpbf16ps issues at half the FMA rate, so bf16 weights are widened to f32 one
// tile at a time ([256 rows, <= 2304 cols], 2.3 MB at most, L2-sized) right before sgemm uses it:
// the weights stay bf16 in memory and the widening costs O(N K) against the product's O(M N K).
// Threading: the Debian oneDNN uses OpenMP; each tessera pool thread calls sgemm on its own tiles
// with the OpenMP thread count set to 1 on that thread, so no OpenMP team ever competes with the
// pool for the cores.
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/simd_kernels.h"
#include "core/check.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

namespace {

constexpr int64_t kTileRows = 256;
constexpr int64_t kTileCols = 2304;

void one_omp_thread() {
  thread_local bool done = false;
  if (!done) {
    omp_set_num_threads(1);
    done = true;
  }
}

void sgemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
           int64_t ldb, float beta, float* C, int64_t ldc) {
  const dnnl_status_t st = dnnl_sgemm('N', 'T', M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
  TS_ASSERT(st == dnnl_success);
}

}  // namespace

void gemm_dnnl(Tensor x, const CpuWeight& w, const Tensor* bias, Tensor out) {
  const int64_t M = x.rows, K = x.cols, N = w.rows;
  const Isa isa = active_isa();
  TS_ASSERT(isa != Isa::scalar);
  // A and C as f32 rows (the CPU backend's activations already are).
  thread_local std::vector<float> a_buf, c_buf;
  const float* A = x.ptr<const float>();
  int64_t lda = x.stride;
  if (x.dtype != DType::f32) {
    a_buf.resize(static_cast<size_t>(M * K));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) a_buf[m * K + k] = load_elem(x.data, x.dtype, m * x.stride + k);
    A = a_buf.data();
    lda = K;
  }
  float* C = out.ptr<float>();
  int64_t ldc = out.stride;
  if (out.dtype != DType::f32) {
    c_buf.resize(static_cast<size_t>(M * N));
    C = c_buf.data();
    ldc = N;
  }
  const float* bias_p = bias ? bias->ptr<const float>() : nullptr;
  auto widen = isa == Isa::avx512 ? avx512::widen_bf16 : avx2::widen_bf16;
  // K split into near-equal column tiles of at most kTileCols.
  const int64_t k_tiles = (K + kTileCols - 1) / kTileCols;
  const int64_t kb = (K + k_tiles - 1) / k_tiles;
  ThreadPool::global().parallel_dynamic(N, kTileRows, [&](int64_t n0, int64_t n1, int) {
    one_omp_thread();
    const int64_t nb = n1 - n0;
    if (w.dtype == DType::f32) {
      sgemm(M, nb, K, A, lda, static_cast<const float*>(w.data()) + n0 * K, K, 0.f, C + n0, ldc);
    } else {
      thread_local std::vector<float> tile;
      tile.resize(static_cast<size_t>(kTileRows * kb));
      const uint16_t* W = static_cast<const uint16_t*>(w.data());
      for (int64_t k0 = 0; k0 < K; k0 += kb) {
        const int64_t kn = std::min(kb, K - k0);
        for (int64_t r = 0; r < nb; ++r) widen(W + (n0 + r) * K + k0, kn, tile.data() + r * kn);
        sgemm(M, nb, kn, A + k0, lda, tile.data(), kn, k0 == 0 ? 0.f : 1.f, C + n0, ldc);
      }
    }
    if (bias_p)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = n0; n < n1; ++n) C[m * ldc + n] += bias_p[n];
  });
  if (out.dtype != DType::f32)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) store_elem(out.data, out.dtype, m * out.stride + n, C[m * ldc + n]);
}

}  // namespace tessera::cpu
