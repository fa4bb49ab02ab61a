// The one-row-per-warp decode GEMV (gemv.h): out[m, r] = W[r] . x[m] (+ bias) for M <= 8, W
// [N, K] bf16, fp32 accumulation. The dispatch (linear.cpp) takes it for small layers, whose rows
// it reads with every load in flight at once, and for the o projection's L2 prefetch.
// ref: cpu/linear.cpp (the contract; fp32 accumulation, one rounding on the store).
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_fusion.cuh"

namespace tessera::cuda {

namespace {

// 8 warps per block, one output row per warp, K split over `wpr` warps when N is too small to
// fill the GPU. Each lane keeps kU 16-byte evict-first weight loads in flight, in guarded batches
// (no serial remainder loop); the first batch is issued before waiting on the previous kernel
// (weights depend on nothing), so it overlaps that kernel's tail. x is re-read from L1. Few
// registers, so 6-8 blocks share an SM and many bytes stay in flight.
constexpr int kU = 8;

// L2Prefetch's rows, a row per warp of the grid (its lanes over the row's 128-byte lines): nothing
// held in registers or waited for. (Per 32-byte sector, or one cp.async.bulk.prefetch.L2 per row,
// measured the same.)
__device__ __forceinline__ void l2_prefetch(const L2Prefetch& pf) {
  constexpr int H = 2;  // gate and up
  const int rows = pf.G * pf.take * H;
  const int warps = static_cast<int>(gridDim.x * blockDim.x / 32);
  const int lane = threadIdx.x & 31;
  for (int q = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32); q < rows;
       q += warps) {
    const int b = q / (pf.take * H), r = q - b * pf.take * H, j = r / H, h = r - j * H;
    const int64_t r0 = pf.N * b / pf.G, r1 = pf.N * (b + 1) / pf.G;
    if (r0 + pf.skip + j >= r1) continue;
    const bf16* row = pf.W + (r0 + pf.skip + j + h * pf.N) * pf.K;
    for (int e = lane * 64; e < pf.K; e += 32 * 64)
      asm volatile("prefetch.global.L2 [%0];" ::"l"(row + e));
  }
}

// PF: also issues an L2Prefetch before its PDL wait (M = 1: the o projection, while the decode
// attention runs and HBM would idle, for the gate_up GEMV after it, which reads L2-resident
// weights faster than HBM ones).
template <int M, class TO, int KU, bool PF>
__global__ void __launch_bounds__(256, M == 1   ? 4
                                       : M <= 4 ? 2
                                                : 1)
    gemv_kernel(const bf16* __restrict__ W, int64_t N, int K8, const bf16* __restrict__ x,
                int64_t xs, const float* __restrict__ bias, TO* __restrict__ out, int64_t os,
                int wpr, L2Prefetch pf) {
  __shared__ float red[8][M];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (8 / wpr) + warp / wpr;
  const int slice = warp % wpr;
  const int c0 = static_cast<int>(static_cast<int64_t>(K8) * slice / wpr);
  const int c1 = row < N ? static_cast<int>(static_cast<int64_t>(K8) * (slice + 1) / wpr) : c0;
  const uint4* wr = reinterpret_cast<const uint4*>(W) + (row < N ? row : 0) * K8;
  uint4 wv[KU];
#pragma unroll
  for (int u = 0; u < KU; ++u) {
    const int c = c0 + u * 32 + lane;
    if (c < c1) wv[u] = __ldcs(wr + c);
  }
  if constexpr (PF) l2_prefetch(pf);
  pdl_wait();
  pdl_trigger();
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0.f;
  for (int base = c0;;) {
#pragma unroll
    for (int u = 0; u < KU; ++u) {
      const int c = base + u * 32 + lane;
      if (c < c1) {
#pragma unroll
        for (int m = 0; m < M; ++m)
          acc[m] += dot8(wv[u], __ldg(reinterpret_cast<const uint4*>(x + m * xs) + c));
      }
    }
    base += 32 * KU;
    if (base >= c1) break;
#pragma unroll
    for (int u = 0; u < KU; ++u) {
      const int c = base + u * 32 + lane;
      if (c < c1) wv[u] = __ldcs(wr + c);
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = warp_sum(acc[m]);
  if (wpr > 1) {
    if (lane == 0) {
#pragma unroll
      for (int m = 0; m < M; ++m) red[warp][m] = acc[m];
    }
    __syncthreads();
    if (slice == 0) {
#pragma unroll
      for (int m = 0; m < M; ++m) {
        float t = 0.f;
        for (int j = 0; j < wpr; ++j) t += red[warp + j][m];
        acc[m] = t;
      }
    }
  }
  if (slice == 0 && lane == 0 && row < N) {
    const float b = bias ? bias[row] : 0.f;
#pragma unroll
    for (int m = 0; m < M; ++m) out[m * os + row] = from_f32<TO>(acc[m] + b);
  }
}

template <class TO>
void launch_rows(int M, const bf16* W, int64_t N, int64_t K, const bf16* x, int64_t xs,
                 const float* bias, TO* out, int64_t os, cudaStream_t st, const L2Prefetch& pf) {
  const int K8 = static_cast<int>(K / 8);
  int wpr = 1;
  while (wpr < 8 && N * wpr < 8192 && K8 / (wpr * 2) >= 64) wpr *= 2;
  const unsigned grid = ceil_div(N, 8 / wpr);
  // Load slots per lane: as many as a warp's slice needs, up to kU (a guarded load that a short
  // slice never uses is still issued: o of a 1B model used 2 of 8).
  const int64_t slice = (K8 + wpr - 1) / wpr;
  dispatch_m(M, [&]<int M_>() {
    auto go = [&]<int KU>() {
      if constexpr (M_ == 1) {
        if (pf.W) {
          launch(gemv_kernel<M_, TO, KU, true>, grid, 256, 0, st, "linear (gemv)", W, N, K8, x, xs,
                 bias, out, os, wpr, pf);
          return;
        }
      }
      launch(gemv_kernel<M_, TO, KU, false>, grid, 256, 0, st, "linear (gemv)", W, N, K8, x, xs,
             bias, out, os, wpr, pf);
    };
    if (slice <= 64) {
      go.template operator()<2>();
    } else if (slice <= 128) {
      go.template operator()<4>();
    } else {
      go.template operator()<kU>();
    }
  });
}

}  // namespace

void launch_gemv_rows(int M, const bf16* W, int64_t N, int64_t K, const bf16* x, int64_t xs,
                      const float* bias, void* out, DType out_dt, int64_t os, cudaStream_t st,
                      const L2Prefetch& pf) {
  if (out_dt == DType::f32) {
    launch_rows<float>(M, W, N, K, x, xs, bias, static_cast<float*>(out), os, st, pf);
  } else {
    launch_rows<bf16>(M, W, N, K, x, xs, bias, static_cast<bf16*>(out), os, st, pf);
  }
}

}  // namespace tessera::cuda
