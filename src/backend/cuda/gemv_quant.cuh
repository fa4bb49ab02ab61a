// The packed decode GEMV (quant.h): out[m, r] = W[r] . x[m] (+ bias) for M <= 16 on MLX affine
// weights in the CUDA layout (quant.h: [N, K sb / 32] words, (scale, bias) pairs [N, K / group]),
// fp32 accumulation, with the decoder stages of the bf16 streaming GEMV (gemv_stream.cu) and the
// same structure: a persistent grid of 2 blocks per SM, each owning a contiguous run of output
// rows, its 8 warps taking (rows, K slice) items in turn with the next item's 16-byte
// evict-first loads in flight while the current one is reduced, the first item's loads before
// the PDL wait; the norm prologue, the gated epilogue and the LM head's greedy pick as there
// (gemv_fusion.cuh, so that both compute the same bits around the products).
// Differences, each for the packed rows:
//  - an item is RP rows (or RP gate/up pairs) at once, its RR = RP (x2 gated) rows' chunks
//    dealt to the lanes as one flat list: a 4-bit row of a 1B model (K = 1152) is only 36
//    chunks, so one row per item would leave most lanes idle and too few bytes in flight;
//  - each chunk (16 bytes: E = 128 / sb inputs of one group) comes with its group's (scale,
//    bias) pair, loaded beside it;
//  - M = 1 (XF): x in shared memory as f32, in the chunk-major order below, with the sum of each
//    chunk's inputs, so that a chunk costs its E products of x with q and two FMAs for the
//    group, sum(x w) = scale sum(x q) + bias sum(x) (the products run on 128 + q, one AND/OR
//    from the packed nibbles, the 128 taken out with the sum);
//  - M > 1: each value dequantized once (scale * q + bias, f32) and multiplied by every row of
//    x (bf16, 16-byte loads from the L1 or the norm's shared memory);
//  - the deferred norm (M = 1) folds its two sums into one input before the products: x = P +
//    s_y Q is written once per block (the products then run once per weight, not twice), and the
//    last block's write-back of h reads the same value.
// ref: cpu/quant_linear.cpp (the contract: the dense product on scale * q + bias).
#pragma once

#include <type_traits>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_fusion.cuh"
#include "backend/cuda/quant.h"

namespace tessera::cuda {

constexpr size_t kQuantMaxSmem = 96u << 10;
constexpr int kQuantMaxItems = 64;

// Rows (or gate/up pairs) per item and loads per lane per item, by M: fewer as the accumulators
// [RR][M] take the registers, and at 8 bits (twice the chunks per row) half as many rows.
constexpr int quant_rp(int MT, bool gated, int SB) {
  return (MT == 1 ? (gated ? 2 : 4) : MT == 2 ? (gated ? 1 : 2) : 1) / (SB == 8 && MT == 1 ? 2 : 1);
}
constexpr int quant_ku(int MT) {
  return MT >= 16 ? 2 : MT >= 8 ? 3 : MT >= 2 ? 4 : 5;
}

// One launch: g as the bf16 kernels take it (N: rows, or pairs when gated; up, x, bias, out,
// fusions; g.W and g.K8 unused) plus the packed operands.
struct QuantGemvArgs {
  GemvArgs g;
  const uint4* W = nullptr;  // [rows, C] chunks
  const void* S = nullptr;   // [rows, G] (scale, bias) pairs
  int C = 0, G = 0;          // chunks and groups per row
  int cshift = 0;            // group of chunk c: c >> cshift
  int M = 1;                 // rows of x (<= the kernel's MT)
};

// Shared memory of x in f32 for M = 1 (XF): K floats in chunk-major order, then C chunk sums.
// Input i of chunk c = i / E at float4 ((i % E) / 4) C + c, element i % 4: a lane reading chunk
// c's quads reads consecutive float4 with its neighbours (conflict-free).
__host__ __device__ inline size_t quant_xf_bytes(int64_t K, int E) {
  return static_cast<size_t>(K) * 4 + static_cast<size_t>(K / E) * 4;
}
__device__ __forceinline__ int quant_x_index(int i, int E, int C) {
  return (((i % E) >> 2) * C + i / E) * 4 + (i & 3);
}

template <int SB>
__device__ __forceinline__ float quant_chunk_xf(uint4 w, const float4* X4, int C, int c) {
  // sum over the chunk of x * (128 + q) (SB = 4; the caller takes 128 sum(x) out) or x * q.
  const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
  float d0 = 0.f, d1 = 0.f;
  if constexpr (SB == 4) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float4 xa = X4[(2 * j) * C + c], xb = X4[(2 * j + 1) * C + c];
      const float xl[4] = {xa.x, xa.y, xa.z, xa.w}, xh[4] = {xb.x, xb.y, xb.z, xb.w};
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        // elements t and t + 4 of the word as the bf16 pair (128 + q_t, 128 + q_t+4)
        const uint32_t v = ((ws[j] >> (4 * t)) & 0x000f000fu) | 0x43004300u;
        d0 = fmaf(xl[t], __uint_as_float(v << 16), d0);
        d1 = fmaf(xh[t], __uint_as_float(v & 0xffff0000u), d1);
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float4 xa = X4[j * C + c];
      const float xl[4] = {xa.x, xa.y, xa.z, xa.w};
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        // byte t as 2^23 + q, exact, then q
        const float q = __uint_as_float(__byte_perm(ws[j], 0x4b000000u, 0x7440u | t)) - 8388608.f;
        if (t & 1) {
          d1 = fmaf(xl[t], q, d1);
        } else {
          d0 = fmaf(xl[t], q, d0);
        }
      }
    }
  }
  return d0 + d1;
}

// Eight values of a chunk (octet o: 4-bit word o, or 8-bit words 2o, 2o + 1) dequantized.
template <int SB>
__device__ __forceinline__ void quant_octet(uint4 w, int o, float s, float b, float (&v)[8]) {
  const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
  if constexpr (SB == 4) {
    const uint32_t x = ws[o];
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const uint32_t p = ((x >> (4 * t)) & 0x000f000fu) | 0x43004300u;
      v[t] = fmaf(s, __uint_as_float(p << 16) - 128.f, b);
      v[t + 4] = fmaf(s, __uint_as_float(p & 0xffff0000u) - 128.f, b);
    }
  } else {
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const uint32_t x = ws[2 * o + (t >> 2)];
      v[t] =
          fmaf(s, __uint_as_float(__byte_perm(x, 0x4b000000u, 0x7440u | (t & 3))) - 8388608.f, b);
    }
  }
}

template <bool SF>
__device__ __forceinline__ void quant_pair(std::conditional_t<SF, uint2, uint32_t> p, float& s,
                                           float& b) {
  if constexpr (SF) {
    s = __uint_as_float(p.x);
    b = __uint_as_float(p.y);
  } else {
    s = __uint_as_float(p << 16);
    b = __uint_as_float(p & 0xffff0000u);
  }
}

// MT: rows of x the kernel is built for (a.M <= MT at run time); SB: stored bits; SF: f32
// pairs; XF (M = 1): x in f32 in shared memory; DEFER (M = 1 with the norm): the deferred norm
// prologue; ARGMAX: the LM head's greedy pick.
template <int MT, class TO, bool NORM, bool GATED, int SB, bool SF, bool XF, bool DEFER,
          bool ARGMAX>
__global__ void __launch_bounds__(256, 2) gemv_quant_kernel(QuantGemvArgs a) {
  static_assert(!XF || MT == 1, "XF: M = 1");
  static_assert(!DEFER || (XF && NORM), "DEFER: M = 1 with the norm");
  static_assert(!ARGMAX || (DEFER && std::is_same_v<TO, float> && !GATED), "ARGMAX: LM heads");
  constexpr int RP = quant_rp(MT, GATED, SB), RR = RP * (GATED ? 2 : 1), KU = quant_ku(MT);
  constexpr int E = 128 / SB;
  using ST = std::conditional_t<SF, uint2, uint32_t>;
  __shared__ float red[kQuantMaxItems][RR][MT];
  __shared__ float nred[32];
  __shared__ int is_last;
  extern __shared__ __align__(16) unsigned char quant_smem[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int C = a.C, wpr = a.g.wpr, N = a.g.N, M = MT == 1 ? 1 : a.M;
  const int units = (N + RP - 1) / RP;
  const int ub0 = static_cast<int>(static_cast<int64_t>(units) * blockIdx.x / gridDim.x);
  const int ub1 = static_cast<int>(static_cast<int64_t>(units) * (blockIdx.x + 1) / gridDim.x);
  const int items = (ub1 - ub0) * wpr;
  const int sl = warp % wpr;
  const int lo = static_cast<int>(static_cast<int64_t>(C) * sl / wpr);
  const int len = static_cast<int>(static_cast<int64_t>(C) * (sl + 1) / wpr) - lo;
  // Each lane's slots, the same in every item of this warp: item row (RR: none) << 16 | chunk,
  // rows fastest: the RR lanes of one chunk read the same x (one shared-memory broadcast instead
  // of RR reads; RR divides 32, so a lane's row is the same in all its slots).
  int slot[KU];
#pragma unroll
  for (int u = 0; u < KU; ++u) {
    const int s = lane + 32 * u, r = s < RR * len ? s % RR : RR;
    slot[u] = (r << 16) | (lo + s / RR);
  }
  auto sr = [&](int u) { return slot[u] >> 16; };
  auto sc = [&](int u) { return slot[u] & 0xffff; };
  const ST* S = static_cast<const ST*>(a.S);
  // The row of item row r (0 <= r < RR) in unit `unit`, or -1 past the end.
  auto row_at = [&](int unit, int r) -> int64_t {
    const int row = unit * RP + r % RP;
    return row < N ? row + (r / RP) * a.g.up : -1;
  };
  uint4 cur[KU], nxt[KU];
  ST pc[KU], pn[KU];
  auto load = [&](uint4(&wb)[KU], ST(&pb)[KU], int it) {
    const int unit = ub0 + it / wpr;
#pragma unroll
    for (int u = 0; u < KU; ++u) {
      if (sr(u) < RR) {
        const int64_t r = row_at(unit, sr(u));
        if (r >= 0) {
          wb[u] = __ldcs(a.W + r * C + sc(u));
          pb[u] = __ldg(S + r * a.G + (sc(u) >> a.cshift));
        }
      }
    }
  };
  int it = warp;
  int ticket = 0;
  if (it < items) load(cur, pc, it);
  DeferWeights dw;
  if constexpr (DEFER && !GATED) dw.load(a.g.f, C * E);
  pdl_wait();
  pdl_trigger();
  const int K = C * E;
  const GemvFusion& f = a.g.f;
  const bf16* x = a.g.x;
  int64_t xs = a.g.xs;
  float s_h = 1.f, s_y = 1.f;  // DEFER: the norm's scales
  float* X = reinterpret_cast<float*>(quant_smem + (DEFER ? gemv_defer_bytes(K) : 0));
  float* xsum = X + K;
  if constexpr (DEFER) {
    if constexpr (GATED) dw.load(f, K);
    gemv_defer_prologue(f, K, quant_smem, nred, s_y, s_h, dw);
    if (tid == 0) ticket = atomicAdd(f.counter, 1);
    // x = P + s_y Q once (P keeps it, Q becomes 0, so the write-back's h is s_h x).
    float* P = reinterpret_cast<float*>(quant_smem);
    float* Q = P + K;
    for (int i = tid; i < K; i += 256) {
      const int j = x_plane_index(i, K);
      const float v = __fmaf_rn(s_y, Q[j], P[j]);
      P[j] = v;
      Q[j] = 0.f;
      X[quant_x_index(i, E, C)] = v;
    }
    __syncthreads();
  } else if constexpr (NORM) {
    // add_rms_norm of each row into [M][K] bf16 h, then [M][K] f32 v (gemv_norm_bytes)
    bf16* hs = reinterpret_cast<bf16*>(quant_smem);
    float* vs = reinterpret_cast<float*>(quant_smem + static_cast<size_t>(M) * K * 2);
    for (int m = 0; m < M; ++m) {
      AddRmsNormRow<bf16, bf16> row;
      row.load_weights(f.w_y, f.w_out, K);
      row.run(f.res + m * f.res_stride, f.y + m * f.y_stride, f.w_y, f.w_out, f.eps, K, vs + m * K,
              hs + m * K, nred);
    }
    __syncthreads();
    if (tid == 0) ticket = atomicAdd(f.counter, 1);
    x = hs;
    xs = K;
  } else if constexpr (XF) {
    for (int q = tid; q < K / 4; q += 256) {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(x) + q);
      reinterpret_cast<float4*>(X)[quant_x_index(4 * q, E, C) / 4] =
          make_float4(__uint_as_float(v.x << 16), __uint_as_float(v.x & 0xffff0000u),
                      __uint_as_float(v.y << 16), __uint_as_float(v.y & 0xffff0000u));
    }
    __syncthreads();
  }
  if constexpr (XF) {
    const float4* X4 = reinterpret_cast<const float4*>(X);
    for (int c = tid; c < C; c += 256) {
      float t = 0.f;
#pragma unroll
      for (int q = 0; q < E / 4; ++q) {
        const float4 v = X4[q * C + c];
        t += (v.x + v.y) + (v.z + v.w);
      }
      xsum[c] = t;
    }
    __syncthreads();
  }
  float amax_v = -INFINITY;
  int amax_i = -1;
  auto store = [&](int m, int row, float g, float u) {
    if constexpr (DEFER) {
      g = __fmul_rn(s_h, g);
      u = __fmul_rn(s_h, u);
    }
    const TO v = gemv_store<TO, GATED>(a.g, m, row, g, u);
    if constexpr (ARGMAX) argmax_take(v, row, amax_v, amax_i);
  };
  // A lane's slots all hold chunks of one item row, lane % RR (RR divides 32): it keeps one sum
  // per row of x, and the lanes of a row add theirs with the shuffles of offsets 16 .. RR, so
  // lane r < RR ends with item row r's sum. (Sums per item row, picked by the slot's row, made the
  // compiler keep them in local memory: a load and a store on every chunk's critical path.)
  auto reduce_item = [&](const uint4(&wb)[KU], const ST(&pb)[KU], int it) {
    const int unit = ub0 + it / wpr;
    float acc[MT];
#pragma unroll
    for (int m = 0; m < MT; ++m) acc[m] = 0.f;
#pragma unroll
    for (int u = 0; u < KU; ++u) {
      if (sr(u) < RR && row_at(unit, sr(u)) >= 0) {
        float s, b;
        quant_pair<SF>(pb[u], s, b);
        if constexpr (XF) {
          const float d = quant_chunk_xf<SB>(wb[u], reinterpret_cast<const float4*>(X), C, sc(u));
          acc[0] += fmaf(s, d, (SB == 4 ? fmaf(-128.f, s, b) : b) * xsum[sc(u)]);
        } else {
#pragma unroll
          for (int o = 0; o < E / 8; ++o) {
            float v[8];
            quant_octet<SB>(wb[u], o, s, b, v);
#pragma unroll
            for (int m = 0; m < MT; ++m) {
              if (m < M) {
                const uint4* xr = reinterpret_cast<const uint4*>(x + m * xs) + sc(u) * (E / 8) + o;
                const uint4 xv = NORM ? *xr : __ldg(xr);
                float4 x0, x1;
                widen_bf16x8(xv, x0, x1);
                float t = acc[m];
                t = fmaf(v[0], x0.x, t);
                t = fmaf(v[1], x0.y, t);
                t = fmaf(v[2], x0.z, t);
                t = fmaf(v[3], x0.w, t);
                t = fmaf(v[4], x1.x, t);
                t = fmaf(v[5], x1.y, t);
                t = fmaf(v[6], x1.z, t);
                acc[m] = fmaf(v[7], x1.w, t);
              }
            }
          }
        }
      }
    }
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int o = 16; o >= RR; o >>= 1) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], o);
    if (wpr == 1) {
      // lane j < RP stores pair j: its gate (item row j) and, gated, its up (item row RP + j)
      float up[MT];
#pragma unroll
      for (int m = 0; m < MT; ++m)
        up[m] = GATED ? __shfl_sync(0xffffffffu, acc[m], (lane + RP) & 31) : 0.f;
      const int row = unit * RP + lane;
      if (lane < RP && row < N)
#pragma unroll
        for (int m = 0; m < MT; ++m)
          if (m < M) store(m, row, acc[m], up[m]);
    } else if (lane < RR) {
#pragma unroll
      for (int m = 0; m < MT; ++m) red[it][lane][m] = acc[m];
    }
  };
  for (; it < items; it += 8) {
    if (it + 8 < items) load(nxt, pn, it + 8);
    reduce_item(cur, pc, it);
#pragma unroll
    for (int u = 0; u < KU; ++u) {
      cur[u] = nxt[u];
      pc[u] = pn[u];
    }
  }
  if (wpr > 1) {
    __syncthreads();
    for (int e = tid; e < (ub1 - ub0) * RP * M; e += 256) {
      const int i = e / (RP * M), j = (e / M) % RP, m = e % M;
      const int row = (ub0 + i) * RP + j;
      if (row >= N) continue;
      float g = 0.f, u = 0.f;
      for (int s = 0; s < wpr; ++s) {
        g += red[i * wpr + s][j][m];
        if constexpr (GATED) u += red[i * wpr + s][RP + j][m];
      }
      store(m, row, g, u);
    }
  }
  if constexpr (DEFER) {
    gemv_defer_writeback(f, K, quant_smem, ticket, &is_last, s_y, s_h);
  } else if constexpr (NORM) {
    if (gemv_last_block(ticket, &is_last)) {
      const bf16* hs = reinterpret_cast<const bf16*>(quant_smem);
      const float* vs = reinterpret_cast<const float*>(quant_smem + static_cast<size_t>(M) * K * 2);
      for (int m = 0; m < M; ++m)
        for (int i = tid; i < K; i += 256) {
          f.res[m * f.res_stride + i] = vs[m * K + i];
          f.h[m * f.h_stride + i] = hs[m * K + i];
        }
      if (tid == 0) *f.counter = 0;
    }
  }
  if constexpr (ARGMAX) gemv_argmax_finish(f, amax_v, amax_i);
}

// The launch of one packed GEMV (gemv_quant.cu chose the variant): M = 1 takes XF (and DEFER
// with the norm, ARGMAX with the pick), other M the kernel of the next power of two.
struct QuantLaunch {
  int M = 1;
  bool norm = false, gated = false, f32_scales = false;
  DType out_dt = DType::bf16;
  unsigned grid = 0;
  size_t smem = 0;
};

template <int MT, class TO, bool NORM, bool GATED, int SB, bool SF, bool XF, bool DEFER = false,
          bool ARGMAX = false>
void launch_quant_k(const QuantGemvArgs& a, const QuantLaunch& l, cudaStream_t st) {
  auto* k = gemv_quant_kernel<MT, TO, NORM, GATED, SB, SF, XF, DEFER, ARGMAX>;
  static const bool configured = [k] {
    TS_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(kQuantMaxSmem)));
    return true;
  }();
  (void)configured;
  launch(k, l.grid, 256, l.smem, st, "linear (quantized gemv)", a);
}

template <int SB, bool SF, class TO>
void launch_quant_to(const QuantGemvArgs& a, const QuantLaunch& l, cudaStream_t st) {
  constexpr bool bf = std::is_same_v<TO, bf16>;
  if (l.M == 1) {  // quant_gemv_fits: x in f32 always fits then
    if (l.norm) {
      if constexpr (bf) {
        if (l.gated) return launch_quant_k<1, TO, true, true, SB, SF, true, true>(a, l, st);
        return launch_quant_k<1, TO, true, false, SB, SF, true, true>(a, l, st);
      } else {
        if (a.g.f.amax_id)
          return launch_quant_k<1, TO, true, false, SB, SF, true, true, true>(a, l, st);
        return launch_quant_k<1, TO, true, false, SB, SF, true, true>(a, l, st);
      }
    }
    if constexpr (bf)
      if (l.gated) return launch_quant_k<1, TO, false, true, SB, SF, true>(a, l, st);
    return launch_quant_k<1, TO, false, false, SB, SF, true>(a, l, st);
  }
  auto by_m = [&]<int MT>() {
    if constexpr (bf && MT <= kQuantNormMaxM) {
      if (l.norm && l.gated) return launch_quant_k<MT, TO, true, true, SB, SF, false>(a, l, st);
      if (l.norm) return launch_quant_k<MT, TO, true, false, SB, SF, false>(a, l, st);
    }
    if constexpr (bf)
      if (l.gated) return launch_quant_k<MT, TO, false, true, SB, SF, false>(a, l, st);
    return launch_quant_k<MT, TO, false, false, SB, SF, false>(a, l, st);
  };
  if (l.M <= 2) return by_m.template operator()<2>();
  if (l.M <= 4) return by_m.template operator()<4>();
  if (l.M <= 8) return by_m.template operator()<8>();
  by_m.template operator()<16>();
}

// Instantiated once per SB (gemv_quant4.cu, gemv_quant8.cu: two files that build in parallel).
template <int SB>
void launch_quant_sb(const QuantGemvArgs& a, const QuantLaunch& l, cudaStream_t st) {
  auto to = [&]<bool SF>() {
    if (l.out_dt == DType::f32) return launch_quant_to<SB, SF, float>(a, l, st);
    launch_quant_to<SB, SF, bf16>(a, l, st);
  };
  if (l.f32_scales) return to.template operator()<true>();
  to.template operator()<false>();
}

extern template void launch_quant_sb<4>(const QuantGemvArgs&, const QuantLaunch&, cudaStream_t);
extern template void launch_quant_sb<8>(const QuantGemvArgs&, const QuantLaunch&, cudaStream_t);

}  // namespace tessera::cuda
