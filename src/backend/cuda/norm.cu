// RMSNorm and residual add + RMSNorm: one block per row, sums in fp32, the same operation order as
// the CPU backend (x * inv * w). ref: transformers Gemma3RMSNorm / LlamaRMSNorm; cpu/norm.cpp.
// Rows are short (hidden 1152..8192), so each thread keeps its elements in registers (up to
// kPerThread) and the row is read once; longer rows re-read global memory.
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/norm.h"

namespace tessera::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 16;  // rows up to 4096 stay in registers

template <class TX, class TO>
__global__ void rms_norm_kernel(const TX* __restrict__ x, int64_t xs, const float* __restrict__ w,
                                float eps, TO* __restrict__ out, int64_t os, int n) {
  pdl_enter();
  __shared__ float red[32];
  const int64_t r = blockIdx.x;
  const TX* xr = x + r * xs;
  float v[kPerThread];
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
    if (i < n) orow[i] = from_f32<TO>(v[k] * inv * w[i]);
  }
  for (int i = threadIdx.x + kPerThread * kThreads; i < n; i += kThreads)
    orow[i] = from_f32<TO>(to_f32(xr[i]) * inv * w[i]);
}

// residual += (w_y ? norm(y) * w_y : y); out = norm(residual) * w_out when w_out.
template <class TY, class TO>
__global__ void add_rms_norm_kernel(float* __restrict__ res, int64_t rs, const TY* __restrict__ y,
                                    int64_t ys, const float* __restrict__ w_y,
                                    const float* __restrict__ w_out, float eps,
                                    TO* __restrict__ out, int64_t os, int n) {
  pdl_enter();
  __shared__ float red[32];
  const int64_t r = blockIdx.x;
  float* xr = res + r * rs;
  const TY* yr = y + r * ys;
  float v[kPerThread];
  float inv_y = 1.f;
  if (w_y) {
    float ss = 0.f;
    for (int i = threadIdx.x; i < n; i += kThreads) {
      const float a = to_f32(yr[i]);
      ss += a * a;
    }
    ss = block_sum(ss, red);
    inv_y = 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
  }
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < n) {
      const float a = to_f32(yr[i]);
      const float add = w_y ? a * inv_y * w_y[i] : a;
      v[k] = xr[i] + add;
      xr[i] = v[k];
    } else {
      v[k] = 0.f;
    }
    ss += v[k] * v[k];
  }
  for (int i = threadIdx.x + kPerThread * kThreads; i < n; i += kThreads) {
    const float a = to_f32(yr[i]);
    const float add = w_y ? a * inv_y * w_y[i] : a;
    const float nv = xr[i] + add;
    xr[i] = nv;
    ss += nv * nv;
  }
  if (!w_out) return;
  ss = block_sum(ss, red);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
  TO* orow = out + r * os;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int i = threadIdx.x + k * kThreads;
    if (i < n) orow[i] = from_f32<TO>(v[k] * inv * w_out[i]);
  }
  for (int i = threadIdx.x + kPerThread * kThreads; i < n; i += kThreads)
    orow[i] = from_f32<TO>(xr[i] * inv * w_out[i]);
}

}  // namespace

void rms_norm(Tensor x, Tensor w, float eps, Tensor out, cudaStream_t st) {
  if (x.rows == 0) return;
  dispatch_float(x.dtype, [&](auto tx) {
    using TX = decltype(tx);
    dispatch_float(out.dtype, [&](auto to) {
      using TO = decltype(to);
      launch(rms_norm_kernel<TX, TO>, static_cast<unsigned>(x.rows), kThreads, 0, st, "norm", x.ptr<const TX>(), x.stride, w.ptr<const float>(), eps, out.ptr<TO>(), out.stride,
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
      launch(add_rms_norm_kernel<TY, TO>, static_cast<unsigned>(residual.rows), kThreads, 0, st, "norm", residual.ptr<float>(), residual.stride, y.ptr<const TY>(), y.stride,
          w_y ? w_y->ptr<const float>() : nullptr, w_out ? w_out->ptr<const float>() : nullptr,
          eps, w_out ? out.ptr<TO>() : nullptr, w_out ? out.stride : 0,
          static_cast<int>(residual.cols));
      TS_CUDA_LAUNCH("add_rms_norm");
    });
  });
}

}  // namespace tessera::cuda
