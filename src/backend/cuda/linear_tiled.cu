// The linear layer's fallback kernels (linear.h): a simple tiled GEMM for the dtype mixes the GEMVs
// and cuBLASLt do not take (f32 weights: tests and fixtures, not speed), and the bias add after
// cuBLASLt.
// ref: cpu/linear.cpp (the contract; fp32 accumulation, one rounding on the store).
#include <algorithm>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/linear.h"

namespace tessera::cuda {

namespace {

// The fallback: 16x16 output tiles, K in steps of 16 through shared memory, fp32 accumulation.
template <class TX, class TW, class TO>
__global__ void tiled_gemm_kernel(const TX* __restrict__ x, int64_t xs, const TW* __restrict__ W,
                                  const float* __restrict__ bias, TO* __restrict__ out, int64_t os,
                                  int64_t M, int64_t N, int64_t K) {
  pdl_enter();
  __shared__ float xt[16][17], wt[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t m = static_cast<int64_t>(blockIdx.y) * 16 + ty;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * 16 + tx;
  const int64_t wn = static_cast<int64_t>(blockIdx.x) * 16 + ty;  // W row this thread loads
  float acc = 0.f;
  for (int64_t k0 = 0; k0 < K; k0 += 16) {
    xt[ty][tx] = (m < M && k0 + tx < K) ? to_f32(x[m * xs + k0 + tx]) : 0.f;
    wt[ty][tx] = (wn < N && k0 + tx < K) ? to_f32(W[wn * K + k0 + tx]) : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k) acc += xt[ty][k] * wt[tx][k];
    __syncthreads();
  }
  if (m < M && n < N) out[m * os + n] = from_f32<TO>(acc + (bias ? bias[n] : 0.f));
}

template <class TO>
__global__ void add_bias_kernel(TO* __restrict__ out, int64_t os, int64_t M, int64_t N,
                                const float* __restrict__ bias) {
  pdl_enter();
  const int64_t total = M * N;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t m = e / N, n = e - m * N;
    TO& o = out[m * os + n];
    o = from_f32<TO>(to_f32(o) + bias[n]);
  }
}

}  // namespace

void launch_tiled_gemm(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, const float* bias,
                       Tensor out, cudaStream_t st) {
  const int64_t M = x.rows;
  dispatch_float(x.dtype, [&](auto tx) {
    using TX = decltype(tx);
    dispatch_float(w_dt, [&](auto tw) {
      using TW = decltype(tw);
      dispatch_float(out.dtype, [&](auto to) {
        using TO = decltype(to);
        const dim3 grid(ceil_div(N, 16), ceil_div(M, 16));
        launch(tiled_gemm_kernel<TX, TW, TO>, grid, dim3(16, 16), 0, st, "linear",
               x.ptr<const TX>(), x.stride, static_cast<const TW*>(w), bias, out.ptr<TO>(),
               out.stride, M, N, K);
        TS_CUDA_LAUNCH("tiled_gemm");
      });
    });
  });
}

void launch_add_bias(Tensor out, int64_t M, int64_t N, const float* bias, cudaStream_t st) {
  dispatch_float(out.dtype, [&](auto to) {
    using TO = decltype(to);
    launch(add_bias_kernel<TO>, std::min<unsigned>(ceil_div(M * N, 256), 132 * 16), 256, 0, st,
           "linear", out.ptr<TO>(), out.stride, M, N, bias);
    TS_CUDA_LAUNCH("add_bias");
  });
}

}  // namespace tessera::cuda
