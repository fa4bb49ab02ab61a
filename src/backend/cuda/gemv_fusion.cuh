// Device code shared by the decode GEMVs (gemv.h): the bf16 dot product of the one-row and
// streaming kernels, and the decoder stages that ride on the streaming GEMV (gemv_stream.cu) and
// the tensor-core GEMV (gemv_mma.cu) (GemvFusion), so that both compute the same bits: the
// add_rms_norm prologue into shared memory, the write-back of the residual by the last block, and
// the output store with bias and the gated activation. Include from .cu files only.
#pragma once

#include <type_traits>
#include <utility>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/gemv.h"

namespace tessera::cuda {

// w (8 bf16) . x (8 bf16), in k order.
__device__ __forceinline__ float dot8(uint4 w, uint4 x) {
  const __nv_bfloat162* w2 = reinterpret_cast<const __nv_bfloat162*>(&w);
  const __nv_bfloat162* x2 = reinterpret_cast<const __nv_bfloat162*>(&x);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 a = __bfloat1622float2(w2[i]);
    const float2 b = __bfloat1622float2(x2[i]);
    s = fmaf(a.x, b.x, s);
    s = fmaf(a.y, b.y, s);
  }
  return s;
}

// Shared memory of the norm prologue below: [M][n] bf16 h, then [M][n] f32 v.
__host__ __device__ inline size_t gemv_norm_bytes(int M, int64_t n) {
  return static_cast<size_t>(M) * n * 6;
}

// Where element i of an f32 row of n (n % 8 == 0) sits in the streaming GEMV's shared-memory
// copy of x: two planes, elements 8c..8c+3 of every group at float4 c of the first, 8c+4..8c+7 at
// float4 c of the second. A lane that reads group c (its 16-byte weight load) then reads float4
// c of each plane: 16-byte strides across the warp, conflict-free, where one plane of 32-byte
// groups made every 16-byte read a 2-way bank conflict (twice the shared-memory cycles).
__host__ __device__ inline int x_plane_index(int i, int n) {
  return (i & 4 ? n / 2 : 0) + (i >> 3) * 4 + (i & 3);
}

// Eight bf16 (a 16-byte load) as f32, in order: a bf16 is the high half of its f32, so each
// widens with one shift or mask.
__device__ __forceinline__ void widen_bf16x8(uint4 v, float4& lo, float4& hi) {
  lo = make_float4(__uint_as_float(v.x << 16), __uint_as_float(v.x & 0xffff0000u),
                   __uint_as_float(v.y << 16), __uint_as_float(v.y & 0xffff0000u));
  hi = make_float4(__uint_as_float(v.z << 16), __uint_as_float(v.z & 0xffff0000u),
                   __uint_as_float(v.w << 16), __uint_as_float(v.w & 0xffff0000u));
}

// x = add_rms_norm(res, y) rows into shared memory, computed by every block: [M][n] bf16 h at
// smem, then [M][n] f32 v (gemv_norm_bytes). `nred`: 32 floats of shared memory. Ends with a
// block barrier.
template <int M>
__device__ __forceinline__ void gemv_norm_prologue(const GemvFusion& f, int n, unsigned char* smem,
                                                   float* nred) {
  bf16* hs = reinterpret_cast<bf16*>(smem);
  float* vs = reinterpret_cast<float*>(smem + static_cast<size_t>(M) * n * 2);
  for (int m = 0; m < M; ++m) {
    AddRmsNormRow<bf16, bf16> row;
    row.load_weights(f.w_y, f.w_out, n);
    row.run(f.res + m * f.res_stride, f.y + m * f.y_stride, f.w_y, f.w_out, f.eps, n, vs + m * n,
            hs + m * n, nred);
  }
  __syncthreads();
}

// The deferred norm prologue (M = 1, the streaming GEMV's DEFER variant). add_rms_norm gives the
// GEMV x = s_h * (r + s_y * y w_y) * w_out with two scalars s_y = 1 / rms(y) and s_h = 1 / rms(v);
// both factor out of the dot products, W x = s_h * (W P + s_y * W Q) with P = r * w_out and
// Q = y w_y * w_out, so the block stores P and Q (f32) and starts streaming after one barrier,
// instead of waiting for two block reductions and a bf16 pass over h (each reduction a barrier
// round trip, twice per prologue, twice per layer). The scalars come from four sums taken in
// the same pass, sum(v^2) = sum(r^2) + 2 s_y sum(r y w_y) + s_y^2 sum((y w_y)^2), exchanged
// through `nred` (32 floats: 8 warps x 4) at that barrier. Shared memory: [n] f32 each P, Q, r,
// y w_y (gemv_defer_bytes); r and y w_y are kept for the last block's write-back of v and h.
// Without w_y (a plain residual add) s_y = 1 and y w_y = y.
__host__ __device__ inline size_t gemv_defer_bytes(int64_t n) {
  return static_cast<size_t>(n) * 16;
}

// The first kPer norm weights of each thread (w_y, w_out), which no kernel writes: the caller
// loads them (before its PDL wait where registers allow) and passes them to the prologue.
struct DeferWeights {
  static constexpr int kT = 256, kPer = 5;
  float wy[kPer], wo[kPer];
  __device__ __forceinline__ void load(const GemvFusion& f, int n) {
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int i = threadIdx.x + k * kT;
      wy[k] = f.w_y && i < n ? f.w_y[i] : 0.f;
      wo[k] = i < n ? f.w_out[i] : 0.f;
    }
  }
};

__device__ __forceinline__ void gemv_defer_prologue(const GemvFusion& f, int n, unsigned char* smem,
                                                    float* nred, float& s_y, float& s_h,
                                                    const DeferWeights& dw) {
  constexpr int kT = DeferWeights::kT, kPer = DeferWeights::kPer;
  float* P = reinterpret_cast<float*>(smem);
  float* Q = P + n;
  float* R = Q + n;
  float* YW = R + n;
  float sy = 0.f, sr = 0.f, sry = 0.f, sww = 0.f;
  auto one = [&](int i, float y, float r, float wy, float wo) {
    const float yw = f.w_y ? __fmul_rn(y, wy) : y;
    const int j = x_plane_index(i, n);
    P[j] = __fmul_rn(r, wo);
    Q[j] = __fmul_rn(yw, wo);
    R[i] = r;
    YW[i] = yw;
    sy = __fmaf_rn(y, y, sy);
    sr = __fmaf_rn(r, r, sr);
    sry = __fmaf_rn(r, yw, sry);
    sww = __fmaf_rn(yw, yw, sww);
  };
  {
    // Every load of the first kPer elements in flight before any is used (5: n <= 1280 in one
    // round; 8 took the qkv kernel past the 104 registers that leave room for the attention).
    float y[kPer], r[kPer];
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int i = threadIdx.x + k * kT;
      y[k] = i < n ? to_f32(f.y[i]) : 0.f;
      r[k] = i < n ? f.res[i] : 0.f;
    }
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int i = threadIdx.x + k * kT;
      if (i < n) one(i, y[k], r[k], dw.wy[k], dw.wo[k]);
    }
  }
  for (int i = threadIdx.x + kPer * kT; i < n; i += kT)
    one(i, to_f32(f.y[i]), f.res[i], f.w_y ? f.w_y[i] : 0.f, f.w_out[i]);
  sy = warp_sum(sy);
  sr = warp_sum(sr);
  sry = warp_sum(sry);
  sww = warp_sum(sww);
  const int warp = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 0) {
    nred[warp * 4 + 0] = sy;
    nred[warp * 4 + 1] = sr;
    nred[warp * 4 + 2] = sry;
    nred[warp * 4 + 3] = sww;
  }
  __syncthreads();
  float t[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int w = 0; w < kT / 32; ++w)
#pragma unroll
    for (int j = 0; j < 4; ++j) t[j] = __fadd_rn(t[j], nred[w * 4 + j]);
  const float fn = static_cast<float>(n);
  s_y = f.w_y ? __frcp_rn(__fsqrt_rn(__fadd_rn(__fdiv_rn(t[0], fn), f.eps))) : 1.f;
  // sum(v^2) from the expansion; clamped at 0 against rounding when v nearly cancels.
  const float ss = fmaxf(__fmaf_rn(s_y, __fmaf_rn(s_y, t[3], __fmul_rn(2.f, t[2])), t[1]), 0.f);
  s_h = __frcp_rn(__fsqrt_rn(__fadd_rn(__fdiv_rn(ss, fn), f.eps)));
}

// Whether this block's ticket (taken after its prologue) is the grid's last: that block writes
// the new residual and h from its shared memory, every block having read the old residual before
// taking its ticket, then leaves the counter zero for the next launch. Ends with a barrier.
__device__ __forceinline__ bool gemv_last_block(int ticket, int* is_last) {
  if (threadIdx.x == 0) *is_last = ticket == static_cast<int>(gridDim.x) - 1;
  __syncthreads();
  return *is_last;
}

// DEFER's write-back by the last block: v = r + s_y * y w_y and h = bf16(s_h * (P + s_y * Q)),
// from the prologue's shared memory.
__device__ __forceinline__ void gemv_defer_writeback(const GemvFusion& f, int n,
                                                     const unsigned char* smem, int ticket,
                                                     int* is_last, float s_y, float s_h) {
  if (!gemv_last_block(ticket, is_last)) return;
  const float* P = reinterpret_cast<const float*>(smem);
  const float* Q = P + n;
  const float* R = Q + n;
  const float* YW = R + n;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    f.res[i] = __fmaf_rn(s_y, YW[i], R[i]);
    const int j = x_plane_index(i, n);
    f.h[i] = from_f32<bf16>(__fmul_rn(s_h, __fmaf_rn(s_y, Q[j], P[j])));
  }
  if (threadIdx.x == 0) *f.counter = 0;
}

// The norm prologue's write-back by the last block (gemv_last_block): h and v as it computed them.
template <int M>
__device__ __forceinline__ void gemv_norm_writeback(const GemvFusion& f, int n,
                                                    const unsigned char* smem, int ticket,
                                                    int* is_last) {
  if (!gemv_last_block(ticket, is_last)) return;
  const bf16* hs = reinterpret_cast<const bf16*>(smem);
  const float* vs = reinterpret_cast<const float*>(smem + static_cast<size_t>(M) * n * 2);
  for (int m = 0; m < M; ++m)
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      f.res[m * f.res_stride + i] = vs[m * n + i];
      f.h[m * f.h_stride + i] = hs[m * n + i];
    }
  if (threadIdx.x == 0) *f.counter = 0;
}

// Row `row` of output m from its sums (gate, and up when gated) plus the bias: the value, or
// act(bf16(gate)) * bf16(up) as gated_act computes it from a bf16 gate_up. Returns the value
// stored.
template <class TO, bool GATED>
__device__ __forceinline__ TO gemv_store(const GemvArgs& a, int m, int row, float g, float u) {
  g += a.bias ? a.bias[row] : 0.f;
  TO* o = static_cast<TO*>(a.out) + m * a.os + row;
  TO v;
  if constexpr (GATED) {
    u += a.bias ? a.bias[row + a.up] : 0.f;
    v = from_f32<TO>(act_fn(a.f.act, to_f32(from_f32<bf16>(g))) * to_f32(from_f32<bf16>(u)));
  } else {
    v = from_f32<TO>(g);
  }
  *o = v;
  return v;
}

// The block's first (logit, row) to amax_part; the last block to finish reduces every block's
// and writes the id (0 when no row had one, as greedy_rows), leaving the counter zero. Called by
// every thread of the block after its last store.
__device__ __forceinline__ void gemv_argmax_finish(const GemvFusion& f, float bv, int bi) {
  __shared__ float wv[8];
  __shared__ int wi[8];
  __shared__ int last;
  const int tid = threadIdx.x, nb = gridDim.x;
  block256_argmax(bv, bi, wv, wi);
  if (tid == 0) {
    f.amax_part[2 * blockIdx.x] = bv;
    f.amax_part[2 * blockIdx.x + 1] = __int_as_float(bi);
    __threadfence();
    last = atomicAdd(f.amax_count, 1) == nb - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  bv = -INFINITY;
  bi = -1;
  for (int b = tid; b < nb; b += blockDim.x) {
    const float v = __ldcg(f.amax_part + 2 * b);
    const int id = __float_as_int(__ldcg(f.amax_part + 2 * b + 1));
    if (id >= 0 && before(v, id, bv, bi)) bv = v, bi = id;
  }
  __syncthreads();  // warp 0 has read wv and wi
  block256_argmax(bv, bi, wv, wi);
  if (tid == 0) {
    *f.amax_id = bi < 0 ? 0 : bi;
    *f.amax_count = 0;
  }
}

// Host side: calls f.template operator()<M>() for a runtime M in 1..8 (nothing otherwise), so
// that each decode GEMV launcher instantiates its kernels per M from one place.
template <class F>
void dispatch_m(int M, F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    ((M == I + 1 ? (f.template operator()<I + 1>(), 0) : 0), ...);
  }
  (std::make_integer_sequence<int, 8>{});
}

// Calls f.template operator()<M, TO, NORM, GATED>() for a runtime M in 1..8 and the fusions
// (which write bf16, except the norm at M = 1: the LM head's f32 logits).
template <class TO, class F>
void dispatch_gemv(int M, bool norm, bool gated, F&& f) {
  dispatch_m(M, [&]<int M_>() {
    if constexpr (std::is_same_v<TO, float>) {
      if constexpr (M_ == 1) {
        if (norm && !gated) {
          f.template operator()<M_, TO, true, false>();
          return;
        }
      }
      f.template operator()<M_, TO, false, false>();
    } else if (norm && gated) {
      f.template operator()<M_, TO, true, true>();
    } else if (norm) {
      f.template operator()<M_, TO, true, false>();
    } else if (gated) {
      f.template operator()<M_, TO, false, true>();
    } else {
      f.template operator()<M_, TO, false, false>();
    }
  });
}

}  // namespace tessera::cuda
