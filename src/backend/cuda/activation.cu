// out[r, i] = act(gate_up[r, i]) * gate_up[r, I + i] and x = tanh(x / cap) * cap.
// ref: transformers GELUTanh (gelu_pytorch_tanh), SiLU; cpu/activation.cpp (fp32 math, one
// rounding on the store).
#include <algorithm>

#include "backend/cuda/activation.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_math.cuh"

namespace tessera::cuda {

namespace {

template <Activation A, class TI, class TO>
__global__ void gated_act_kernel(const TI* __restrict__ gu, int64_t gs, TO* __restrict__ out,
                                 int64_t os, int64_t rows, int I) {
  pdl_enter();
  const int64_t total = rows * I;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = e / I;
    const int i = static_cast<int>(e - r * I);
    const float g = to_f32(gu[r * gs + i]);
    const float u = to_f32(gu[r * gs + I + i]);
    out[r * os + i] = from_f32<TO>(act_fn<A>(g) * u);
  }
}

// bf16, 8 elements per thread (I % 8 == 0, 16-byte aligned rows).
template <Activation A>
__global__ void gated_act_vec_kernel(const bf16* __restrict__ gu, int64_t gs,
                                     bf16* __restrict__ out, int64_t os, int64_t rows, int I) {
  pdl_enter();
  const int I8 = I / 8;
  const int64_t total = rows * I8;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = e / I8;
    const int i = static_cast<int>(e - r * I8) * 8;
    const uint4 gv = *reinterpret_cast<const uint4*>(gu + r * gs + i);
    const uint4 uv = *reinterpret_cast<const uint4*>(gu + r * gs + I + i);
    const bf16* g8 = reinterpret_cast<const bf16*>(&gv);
    const bf16* u8 = reinterpret_cast<const bf16*>(&uv);
    uint4 ov;
    bf16* o8 = reinterpret_cast<bf16*>(&ov);
#pragma unroll
    for (int k = 0; k < 8; ++k)
      o8[k] = __float2bfloat16_rn(act_fn<A>(__bfloat162float(g8[k])) * __bfloat162float(u8[k]));
    *reinterpret_cast<uint4*>(out + r * os + i) = ov;
  }
}

__global__ void softcap_kernel(float* __restrict__ x, int64_t stride, int64_t rows, int64_t cols,
                               float cap) {
  pdl_enter();
  const int64_t total = rows * cols;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = e / cols, c = e - r * cols;
    float& v = x[r * stride + c];
    v = tanhf(v / cap) * cap;
  }
}

unsigned grid_for(int64_t n, int threads) {
  return static_cast<unsigned>(std::min<int64_t>((n + threads - 1) / threads, 132 * 16));
}

template <Activation A>
void gated_act_t(Tensor gu, Tensor out, cudaStream_t st) {
  const int I = static_cast<int>(out.cols);
  const bool vec = gu.dtype == DType::bf16 && out.dtype == DType::bf16 && I % 8 == 0 &&
                   gu.stride % 8 == 0 && out.stride % 8 == 0 &&
                   reinterpret_cast<uintptr_t>(gu.data) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(out.data) % 16 == 0;
  if (vec) {
    launch(gated_act_vec_kernel<A>, grid_for(gu.rows * (I / 8), 256), 256, 0, st, "activation",
           gu.ptr<const bf16>(), gu.stride, out.ptr<bf16>(), out.stride, gu.rows, I);
    TS_CUDA_LAUNCH("gated_act");
    return;
  }
  dispatch_float(gu.dtype, [&](auto ti) {
    using TI = decltype(ti);
    dispatch_float(out.dtype, [&](auto to) {
      using TO = decltype(to);
      launch(gated_act_kernel<A, TI, TO>, grid_for(gu.rows * I, 256), 256, 0, st, "activation",
             gu.ptr<const TI>(), gu.stride, out.ptr<TO>(), out.stride, gu.rows, I);
      TS_CUDA_LAUNCH("gated_act");
    });
  });
}

}  // namespace

void gated_act(Tensor gate_up, Activation act, Tensor out, cudaStream_t st) {
  if (gate_up.rows == 0) return;
  if (act == Activation::gelu_tanh) {
    gated_act_t<Activation::gelu_tanh>(gate_up, out, st);
  } else {
    gated_act_t<Activation::silu>(gate_up, out, st);
  }
}

void softcap(Tensor x, float cap, cudaStream_t st) {
  if (x.rows == 0) return;
  if (x.dtype != DType::f32) throw Error(ErrorKind::unsupported, "CUDA softcap expects f32 logits");
  launch(softcap_kernel, grid_for(x.rows * x.cols, 256), 256, 0, st, "activation", x.ptr<float>(),
         x.stride, x.rows, x.cols, cap);
  TS_CUDA_LAUNCH("softcap");
}

}  // namespace tessera::cuda
