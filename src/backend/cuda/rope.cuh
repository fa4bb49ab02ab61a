// One head's q/k RMSNorm + rotary embedding by one warp, shared by rope.cu's kernel and the decode
// attention that takes it over (attention_decode.cu), so that both round identically (the
// arithmetic is pinned with _rn intrinsics: no contraction choices left to the compiler). Lane l
// owns the rotary pairs (j, j + hd/2) for j = l, l + 32, ... (no shuffles but the norm's sum).
// ref: transformers apply_rotary_pos_emb / rotate_half; cpu/rope.cpp (angles pos * inv_freq in
// fp32, cos/sin in fp32, the norm as x * inv * w). Include from .cu files only.
#pragma once

#include "backend/cuda/cuda_common.h"

namespace tessera::cuda {

constexpr int kMaxPairsPerLane = 8;  // hd <= 512

struct RopeLane {
  float fa[kMaxPairsPerLane], fb[kMaxPairsPerLane], inv[kMaxPairsPerLane];

  // Norm weights (nw may be null: no norm) and frequencies: nothing writes them, so a caller may
  // load them before its PDL wait.
  __device__ __forceinline__ void load_weights(const float* nw, const float* inv_freq, int half) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int k = 0; k < kMaxPairsPerLane; ++k) {
      const int j = lane + 32 * k;
      fa[k] = nw && j < half ? nw[j] : 1.f;
      fb[k] = nw && j < half ? nw[j + half] : 1.f;
      inv[k] = j < half ? inv_freq[j] : 0.f;
    }
  }

  // a[k], b[k]: the head's elements j and j + half (zeros past half); rotated in place, normed
  // first when `norm`.
  __device__ __forceinline__ void apply(float (&a)[kMaxPairsPerLane], float (&b)[kMaxPairsPerLane],
                                        bool norm, float eps, int hd, float pos) const {
    const int lane = threadIdx.x & 31, half = hd / 2;
    if (norm) {
      float ss = 0.f;
#pragma unroll
      for (int k = 0; k < kMaxPairsPerLane; ++k) {
        ss = __fmaf_rn(a[k], a[k], ss);
        ss = __fmaf_rn(b[k], b[k], ss);
      }
      ss = warp_sum(ss);
      const float r =
          __fdiv_rn(1.f, __fsqrt_rn(__fadd_rn(__fdiv_rn(ss, static_cast<float>(hd)), eps)));
#pragma unroll
      for (int k = 0; k < kMaxPairsPerLane; ++k) {
        a[k] = __fmul_rn(__fmul_rn(a[k], r), fa[k]);
        b[k] = __fmul_rn(__fmul_rn(b[k], r), fb[k]);
      }
    }
#pragma unroll
    for (int k = 0; k < kMaxPairsPerLane; ++k) {
      if (lane + 32 * k < half) {
        float s, c;
        sincosf(__fmul_rn(pos, inv[k]), &s, &c);
        const float lo = __fsub_rn(__fmul_rn(a[k], c), __fmul_rn(b[k], s));
        const float hi = __fadd_rn(__fmul_rn(b[k], c), __fmul_rn(a[k], s));
        a[k] = lo;
        b[k] = hi;
      }
    }
  }
};

// The head's pairs from x[hd] into a, b (zeros past half).
template <class T>
__device__ __forceinline__ void rope_load(const T* x, int hd, float (&a)[kMaxPairsPerLane],
                                          float (&b)[kMaxPairsPerLane]) {
  const int lane = threadIdx.x & 31, half = hd / 2;
#pragma unroll
  for (int k = 0; k < kMaxPairsPerLane; ++k) {
    const int j = lane + 32 * k;
    a[k] = j < half ? to_f32(x[j]) : 0.f;
    b[k] = j < half ? to_f32(x[j + half]) : 0.f;
  }
}

// The rotated pairs back into x[hd] (rounded to T): the inverse of rope_load.
template <class T>
__device__ __forceinline__ void rope_store(T* x, int hd, const float (&a)[kMaxPairsPerLane],
                                           const float (&b)[kMaxPairsPerLane]) {
  const int lane = threadIdx.x & 31, half = hd / 2;
#pragma unroll
  for (int k = 0; k < kMaxPairsPerLane; ++k) {
    const int j = lane + 32 * k;
    if (j < half) {
      x[j] = from_f32<T>(a[k]);
      x[j + half] = from_f32<T>(b[k]);
    }
  }
}

}  // namespace tessera::cuda
