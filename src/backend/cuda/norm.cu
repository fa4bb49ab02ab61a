// RMSNorm and residual add + RMSNorm: one block per row, sums in fp32, the same operation order as
// the CPU backend (x * inv * w). ref: transformers Gemma3RMSNorm / LlamaRMSNorm; cpu/norm.cpp.
// Rows are short (hidden 1152..8192), so each thread keeps its elements in registers (up to
// kPerThread) and the row is read once; longer rows re-read global memory.
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/norm.h"

namespace tessera::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 8;  // rows up to 2048 stay in registers (Gemma-3-1B: 1152)

// The norm weights do not depend on earlier kernels: they are read before the PDL wait, so their
// latency hides behind the previous kernel; each row is then read in one round trip.
template <class TX, class TO>
__global__ void rms_norm_kernel(const TX* __restrict__ x, int64_t xs, const float* __restrict__ w,
                                float eps, TO* __restrict__ out, int64_t os, int n) {
  __shared__ float red[32];
  const int64_t r = blockIdx.x;
  float wv[kPerThread], v[kPerThread];
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int i = threadIdx.x + k * kThreads;
    wv[k] = i < n ? w[i] : 0.f;
  }
  pdl_wait();
  pdl_trigger();
  const TX* xr = x + r * xs;
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int i = threadIdx.x + k * kThreads;
    v[k] = i < n ? to_f32(xr[i]) : 0.f;
    ss += v[k] * v[k];
  }
  for (int i = threadIdx.x + kPerThread * kThreads; i < n; i += kThreads) {
    const float a = to_f32(xr[i]);
    ss += a * a;
  }
  ss = block_sum(ss, red);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
  TO* orow = out + r * os;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < n) orow[i] = from_f32<TO>(v[k] * inv * wv[k]);
  }
  for (int i = threadIdx.x + kPerThread * kThreads; i < n; i += kThreads)
    orow[i] = from_f32<TO>(to_f32(xr[i]) * inv * w[i]);
}

// residual += (w_y ? norm(y) * w_y : y); out = norm(residual) * w_out when w_out. y and the
// residual row are loaded together (one round trip), the weights before the PDL wait. The row's
// arithmetic is AddRmsNormRow's, shared with the GEMV that fuses this op (gemv_stream.cu).
template <class TY, class TO>
__global__ void add_rms_norm_kernel(float* __restrict__ res, int64_t rs, const TY* __restrict__ y,
                                    int64_t ys, const float* __restrict__ w_y,
                                    const float* __restrict__ w_out, float eps,
                                    TO* __restrict__ out, int64_t os, int n) {
  __shared__ float red[32];
  const int64_t r = blockIdx.x;
  AddRmsNormRow<TY, TO> row;
  row.load_weights(w_y, w_out, n);
  pdl_wait();
  pdl_trigger();
  row.run(res + r * rs, y + r * ys, w_y, w_out, eps, n, res + r * rs,
          w_out ? out + r * os : nullptr, red);
}

}  // namespace

void rms_norm(Tensor x, Tensor w, float eps, Tensor out, cudaStream_t st) {
  if (x.rows == 0) return;
  dispatch_float(x.dtype, [&](auto tx) {
    using TX = decltype(tx);
    dispatch_float(out.dtype, [&](auto to) {
      using TO = decltype(to);
      launch(rms_norm_kernel<TX, TO>, static_cast<unsigned>(x.rows), kThreads, 0, st, "norm",
             x.ptr<const TX>(), x.stride, w.ptr<const float>(), eps, out.ptr<TO>(), out.stride,
             static_cast<int>(x.cols));
      TS_CUDA_LAUNCH("rms_norm");
    });
  });
}

void add_rms_norm(Tensor residual, Tensor y, const Tensor* w_y, const Tensor* w_out, float eps,
                  Tensor out, cudaStream_t st) {
  if (residual.rows == 0) return;
  const DType odt = w_out ? out.dtype : DType::f32;
  dispatch_float(y.dtype, [&](auto ty) {
    using TY = decltype(ty);
    dispatch_float(odt, [&](auto to) {
      using TO = decltype(to);
      launch(add_rms_norm_kernel<TY, TO>, static_cast<unsigned>(residual.rows), kThreads, 0, st,
             "norm", residual.ptr<float>(), residual.stride, y.ptr<const TY>(), y.stride,
             w_y ? w_y->ptr<const float>() : nullptr, w_out ? w_out->ptr<const float>() : nullptr,
             eps, w_out ? out.ptr<TO>() : nullptr, w_out ? out.stride : 0,
             static_cast<int>(residual.cols));
      TS_CUDA_LAUNCH("add_rms_norm");
    });
  });
}

}  // namespace tessera::cuda
