// linear() through oneDNN's sgemm, kept as a measured alternative to the panel kernel
// (TESSERA_CPU_TUNING linear=onednn; bench/NOTES-cpu.md has the comparison): fp32 throughout, the
// panels widened to f32 tiles ([K, <= 256] in sgemm's 'N' form, L2-sized) right before sgemm reads
// them, so the weights stay bf16 in memory. oneDNN's own bf16 matmul is not used: on the dev
// machine vdpbf16ps issues at half the FMA rate and that matmul ran at half its f32 speed.
// Threading: the Debian oneDNN uses OpenMP; each tessera pool thread calls sgemm on its own tiles
// with the OpenMP thread count set to 1 on that thread, so no OpenMP team competes with the pool.
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/simd_kernels.h"
#include "core/check.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

namespace {

constexpr int kTilePanels = 16;  // 256 output columns per sgemm call

void one_omp_thread() {
  thread_local bool done = false;
  if (!done) {
    omp_set_num_threads(1);
    done = true;
  }
}

}  // namespace

void gemm_dnnl(Tensor x, const CpuWeight& w, const Tensor* bias, Tensor out) {
  const int64_t M = x.rows, K = x.cols, N = w.rows;
  const Isa isa = active_isa();
  TS_ASSERT(isa != Isa::scalar);
  thread_local std::vector<float> a_buf, c_buf;
  const float* A = x.ptr<const float>();
  int64_t lda = x.stride;
  if (x.dtype != DType::f32) {
    a_buf.resize(static_cast<size_t>(M * K));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k)
        a_buf[m * K + k] = load_elem(x.data, x.dtype, m * x.stride + k);
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
  LinArgs a;
  a.w = w.data();
  a.w_dtype = w.dtype;
  a.K = K;
  a.N = N;
  a.panel_elems = w.panel_elems;
  auto widen = isa == Isa::avx512 ? avx512::widen_panels : avx2::widen_panels;
  const float* bias_p = bias ? bias->ptr<const float>() : nullptr;
  ThreadPool::global().parallel_dynamic(w.panels, kTilePanels, [&](int64_t p0, int64_t p1, int) {
    one_omp_thread();
    const int np = static_cast<int>(p1 - p0);
    const int64_t ld = np * kPanel, n0 = p0 * kPanel, nb = std::min(N, p1 * kPanel) - n0;
    thread_local std::vector<float> tile;
    tile.resize(static_cast<size_t>(K * ld));
    widen(a, p0, np, tile.data(), ld);
    const dnnl_status_t st =
        dnnl_sgemm('N', 'N', M, nb, K, 1.0f, A, lda, tile.data(), ld, 0.0f, C + n0, ldc);
    TS_ASSERT(st == dnnl_success);
    if (bias_p)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = n0; n < n0 + nb; ++n) C[m * ldc + n] += bias_p[n];
  });
  if (out.dtype != DType::f32)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        store_elem(out.data, out.dtype, m * out.stride + n, C[m * ldc + n]);
}

}  // namespace tessera::cpu
