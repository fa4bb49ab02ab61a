// Device-side pieces shared by a kernel and the fused kernels that replay it, so that the fused
// path computes bit for bit what the separate kernels compute: the gated-MLP activations
// (activation.cu, the GEMV's gated epilogue) and one row of the residual add + RMSNorm
// (norm.cu's add_rms_norm_kernel, the GEMV's norm prologue). Include from .cu files only.
#pragma once

#include "backend/cuda/cuda_common.h"

namespace tessera::cuda {

// ref: transformers GELUTanh (gelu_pytorch_tanh), SiLU; cpu/activation.cpp.
template <Activation A>
__device__ __forceinline__ float act_fn(float g) {
  if constexpr (A == Activation::gelu_tanh) {
    const float k0 = 0.7978845608028654f;  // sqrt(2 / pi)
    return 0.5f * g * (1.f + tanhf(k0 * (g + 0.044715f * g * g * g)));
  } else {
    return g / (1.f + expf(-g));
  }
}

__device__ __forceinline__ float act_fn(Activation a, float g) {
  return a == Activation::gelu_tanh ? act_fn<Activation::gelu_tanh>(g)
                                    : act_fn<Activation::silu>(g);
}

// One row of add_rms_norm by a whole block of 256 threads: v = res + (w_y ? norm(y) * w_y : y)
// into v_out[n] (may be res itself) and, when w_out, h_out[n] = norm(v) * w_out. Each thread keeps
// its first 8 elements in registers (loaded in one round trip; longer rows take a tail loop) and
// sums in increasing i; the arithmetic is pinned with _rn intrinsics (no contraction choices
// left to the compiler), so norm.cu's kernel and the GEMV's norm prologue, which both run this,
// round identically. `red`: 32 floats of shared memory.
template <class TY, class TO>
struct AddRmsNormRow {
  static constexpr int kT = 256, kPer = 8;
  float wy[kPer], wo[kPer];

  // The weights depend on no kernel: a caller may load them before its PDL wait.
  __device__ __forceinline__ void load_weights(const float* w_y, const float* w_out, int n) {
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int i = threadIdx.x + k * kT;
      wy[k] = w_y && i < n ? w_y[i] : 0.f;
      wo[k] = w_out && i < n ? w_out[i] : 0.f;
    }
  }

  __device__ __forceinline__ void run(const float* res, const TY* y, const float* w_y,
                                      const float* w_out, float eps, int n, float* v_out, TO* h_out,
                                      float* red) {
    float yv[kPer], v[kPer];
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int i = threadIdx.x + k * kT;
      yv[k] = i < n ? to_f32(y[i]) : 0.f;
      v[k] = i < n ? res[i] : 0.f;
    }
    float ssy = 0.f;
#pragma unroll
    for (int k = 0; k < kPer; ++k) ssy = __fmaf_rn(yv[k], yv[k], ssy);
    for (int i = threadIdx.x + kPer * kT; i < n; i += kT) {
      const float a = to_f32(y[i]);
      ssy = __fmaf_rn(a, a, ssy);
    }
    const float fn = static_cast<float>(n);
    float inv_y = 1.f;
    if (w_y) {
      ssy = block_sum(ssy, red);
      inv_y = __frcp_rn(__fsqrt_rn(__fadd_rn(__fdiv_rn(ssy, fn), eps)));
    }
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int i = threadIdx.x + k * kT;
      if (i < n) {
        v[k] = __fadd_rn(v[k], w_y ? __fmul_rn(__fmul_rn(yv[k], inv_y), wy[k]) : yv[k]);
        v_out[i] = v[k];
        ss = __fmaf_rn(v[k], v[k], ss);
      }
    }
    for (int i = threadIdx.x + kPer * kT; i < n; i += kT) {
      const float a = to_f32(y[i]);
      const float nv = __fadd_rn(res[i], w_y ? __fmul_rn(__fmul_rn(a, inv_y), w_y[i]) : a);
      v_out[i] = nv;
      ss = __fmaf_rn(nv, nv, ss);
    }
    if (!w_out) return;
    ss = block_sum(ss, red);
    const float inv = __frcp_rn(__fsqrt_rn(__fadd_rn(__fdiv_rn(ss, fn), eps)));
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int i = threadIdx.x + k * kT;
      if (i < n) h_out[i] = from_f32<TO>(__fmul_rn(__fmul_rn(v[k], inv), wo[k]));
    }
    for (int i = threadIdx.x + kPer * kT; i < n; i += kT)
      h_out[i] = from_f32<TO>(__fmul_rn(__fmul_rn(v_out[i], inv), w_out[i]));
  }
};

// The greedy pick's order, shared by the sampler (sampling.cu) and the LM head's fused pick
// (gemv_fusion.cuh) so that both choose the same id: (value, id) first in (value descending, id
// ascending); callers map NaN to -inf before comparing.
__device__ __forceinline__ bool before(float v, int i, float bv, int bi) {
  return bi < 0 || v > bv || (v == bv && i < bi);
}
// One candidate into a running first (bv, bi), NaN taken as -inf (as the greedy pick reads logits).
__device__ __forceinline__ void argmax_take(float v, int i, float& bv, int& bi) {
  if (v != v) v = -INFINITY;
  if (before(v, i, bv, bi)) bv = v, bi = i;
}
// The warp's first (value, id) by before(), in every lane; id < 0 marks a lane with none.
__device__ __forceinline__ void warp_argmax(float& v, int& i) {
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (oi >= 0 && before(ov, oi, v, i)) v = ov, i = oi;
  }
}
// A 256-thread block's first (value, id), in warp 0 (its other threads keep their warp's);
// wv, wi: 8 each of shared memory, read by warp 0 after the call's barrier.
__device__ __forceinline__ void block256_argmax(float& v, int& i, float* wv, int* wi) {
  const int tid = threadIdx.x;
  warp_argmax(v, i);
  if ((tid & 31) == 0) wv[tid >> 5] = v, wi[tid >> 5] = i;
  __syncthreads();
  if (tid < 32) {
    v = tid < 8 ? wv[tid] : -INFINITY;
    i = tid < 8 ? wi[tid] : -1;
    warp_argmax(v, i);
  }
}

}  // namespace tessera::cuda
