// The decoder stages that ride on the decode GEMVs (GemvFusion, linear.h), as device code shared by
// the streaming GEMV (linear.cu) and the tensor-core GEMV (gemv_mma.cu), so that both compute the
// same bits: the add_rms_norm prologue into shared memory, the write-back of the residual by the
// last block, and the output store with bias and the gated activation. Include from .cu files only.
#pragma once

#include <type_traits>
#include <utility>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/linear.h"

namespace tessera::cuda {

// Shared memory of the norm prologue below: [M][n] bf16 h, then [M][n] f32 v.
__host__ __device__ inline size_t gemv_norm_bytes(int M, int64_t n) {
  return static_cast<size_t>(M) * n * 6;
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

// The block whose ticket (taken after its prologue) is the last writes the new residual and h
// from its shared memory: every block had read the old residual before taking its ticket.
template <int M>
__device__ __forceinline__ void gemv_norm_writeback(const GemvFusion& f, int n,
                                                    const unsigned char* smem, int ticket,
                                                    int* is_last) {
  if (threadIdx.x == 0) *is_last = ticket == static_cast<int>(gridDim.x) - 1;
  __syncthreads();
  if (!*is_last) return;
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
// act(bf16(gate)) * bf16(up) as gated_act computes it from a bf16 gate_up.
template <class TO, bool GATED>
__device__ __forceinline__ void gemv_store(const GemvArgs& a, int m, int row, float g, float u) {
  g += a.bias ? a.bias[row] : 0.f;
  TO* o = static_cast<TO*>(a.out) + m * a.os + row;
  if constexpr (GATED) {
    u += a.bias ? a.bias[row + a.up] : 0.f;
    *o = from_f32<TO>(act_fn(a.f.act, to_f32(from_f32<bf16>(g))) * to_f32(from_f32<bf16>(u)));
  } else {
    *o = from_f32<TO>(g);
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
// (which write bf16 only: with TO = float both are off).
template <class TO, class F>
void dispatch_gemv(int M, bool norm, bool gated, F&& f) {
  dispatch_m(M, [&]<int M_>() {
    if constexpr (std::is_same_v<TO, float>) {
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
