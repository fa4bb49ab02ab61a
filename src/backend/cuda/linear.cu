// Linear layers: cuBLASLt for bf16 GEMMs; for decode-sized M two GEMV kernels (one row per warp
// for small layers, a persistent streaming one for large layers and for the fused norm prologue
// and gated epilogue); a tiled fallback.
// ref: cpu/linear.cpp (the contract; fp32 accumulation, one rounding on the store).
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/gemv_fusion.cuh"
#include "backend/cuda/linear.h"
#include "core/check.h"

namespace tessera::cuda {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;
// A "small" layer for the GEMV choices (qkv, o of a 1B model; gate_up, down are larger): up to
// this many weights the GEMVs beat cuBLASLt at any decode M and the one-row and tensor-core
// kernels beat the streaming one (bench/NOTES-cuda.md runs 10 and 15).
constexpr double kSmallLayerWeights = 4e6;
constexpr int kMaxGemvM = 8;

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorKind::internal, std::string("cuBLASLt ") + what + " failed with status " +
                                         std::to_string(static_cast<int>(s)));
}

int alignment_of(const void* p) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  int al = 256;
  while (al > 1 && a % al) al >>= 1;
  return al;
}

// A default-on switch for A/B runs (bench/NOTES-cuda.md): off when the environment variable is
// "0". Callers keep the answer in a static.
bool switch_on(const char* name) {
  const char* e = std::getenv(name);
  return !(e && std::string(e) == "0");
}

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

// w (8 bf16) . x (8 f32, two float4) into two accumulators (even and odd k): a bf16 becomes an
// f32 with one shift or mask, so a 16-byte weight costs 8 ALU + 8 FMA instead of ~29 with bf16
// x (bench/NOTES-cuda.md run 15: the GEMVs were bound by instruction issue, not by memory).
__device__ __forceinline__ void dot8f(uint4 w, float4 a, float4 b, float& s0, float& s1) {
  float4 wa, wb;
  widen_bf16x8(w, wa, wb);
  s0 = fmaf(wa.x, a.x, s0);
  s1 = fmaf(wa.y, a.y, s1);
  s0 = fmaf(wa.z, a.z, s0);
  s1 = fmaf(wa.w, a.w, s1);
  s0 = fmaf(wb.x, b.x, s0);
  s1 = fmaf(wb.y, b.y, s1);
  s0 = fmaf(wb.z, b.z, s0);
  s1 = fmaf(wb.w, b.w, s1);
}

// w (8 bf16) . p and w . q (8 f32 each, two float4) into sp and sq: the deferred norm's two sums.
__device__ __forceinline__ void dot8pq(uint4 w, float4 p0, float4 p1, float4 q0, float4 q1,
                                       float& sp, float& sq) {
  float4 wa, wb;
  widen_bf16x8(w, wa, wb);
  sp = fmaf(wa.x, p0.x, sp);
  sq = fmaf(wa.x, q0.x, sq);
  sp = fmaf(wa.y, p0.y, sp);
  sq = fmaf(wa.y, q0.y, sq);
  sp = fmaf(wa.z, p0.z, sp);
  sq = fmaf(wa.z, q0.z, sq);
  sp = fmaf(wa.w, p0.w, sp);
  sq = fmaf(wa.w, q0.w, sq);
  sp = fmaf(wb.x, p1.x, sp);
  sq = fmaf(wb.x, q1.x, sq);
  sp = fmaf(wb.y, p1.y, sp);
  sq = fmaf(wb.y, q1.y, sq);
  sp = fmaf(wb.z, p1.z, sp);
  sq = fmaf(wb.z, q1.z, sq);
  sp = fmaf(wb.w, p1.w, sp);
  sq = fmaf(wb.w, q1.w, sq);
}

// GEMV for small M: 8 warps per block, one output row per warp, K split over `wpr` warps when N
// is too small to fill the GPU. Each lane keeps kU 16-byte evict-first weight loads in flight,
// in guarded batches (no serial remainder loop); the first batch is issued before waiting on the
// previous kernel (weights depend on nothing), so it overlaps that kernel's tail. x is re-read
// from L1. Few registers, so 6-8 blocks share an SM and many bytes stay in flight.
constexpr int kU = 8;

// L2Prefetch's rows, a row per warp of the grid (its lanes over the row's 128-byte lines): nothing
// held in registers or waited for. (Per 32-byte sector, or one cp.async.bulk.prefetch.L2 per row,
// measured the same: run 24.)
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
// attention runs and HBM would idle, for the gate_up GEMV after it: on L2-resident weights that
// GEMV takes 9.2 instead of 11.1 us, run 24).
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
void launch_gemv(int M, const bf16* W, int64_t N, int64_t K, const bf16* x, int64_t xs,
                 const float* bias, TO* out, int64_t os, cudaStream_t st,
                 const L2Prefetch& pf = {}) {
  const int K8 = static_cast<int>(K / 8);
  int wpr = 1;
  while (wpr < 8 && N * wpr < 8192 && K8 / (wpr * 2) >= 64) wpr *= 2;
  const unsigned grid = ceil_div(N, 8 / wpr);
  // Load slots per lane: as many as a warp's slice needs up to kU (o of a 1B model: 2 of 8 were
  // used, the other six guarded loads issued for nothing; TESSERA_GEMV_ROWKU=0 keeps 8).
  static const bool fit = switch_on("TESSERA_GEMV_ROWKU");
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
    if (fit && slice <= 64) {
      go.template operator()<2>();
    } else if (fit && slice <= 128) {
      go.template operator()<4>();
    } else {
      go.template operator()<kU>();
    }
  });
}

// GEMV for small M, persistent: 2 blocks per SM (3 for the M = 1 kernels whose registers allow
// it: kStreamBlocksPerSm3), each owning a contiguous run of output rows (or ILV's tiles),
// its 8 warps taking (row, K slice) items of it in turn (a warp's slice is fixed: wpr divides 8).
// Each lane keeps up to KU 16-byte evict-first loads of the next item in flight while it reduces
// the current one, so the SM's loads never drain between rows (the one-row-per-warp grid above
// ends every row with a round trip and a block exit). Slices of a row are summed through shared
// memory at the end; the first item's loads go out before the PDL wait.
// Two stages of the decoder can ride on it (GemvFusion), each saving a launch per layer:
//  - norm: x is add_rms_norm(res, y) computed by every block into shared memory (the norm of a
//    1152-wide row costs less than a launch); the last block to finish writes the residual and h
//    back, after every block has read the old residual.
//  - gated: W is [gate; up] (2 I rows); an item is the pair (i, I + i) and the output is
//    act(bf16(g)) * bf16(u), rounded as gated_act rounds gate_up's bf16 output.
// DEFER (M = 1 with the norm and x in f32): the norm's scales are applied after the dot products
// (gemv_defer_prologue): each lane sums w . P and w . Q, the row is s_h * (W P + s_y * W Q). The
// GEMV's input is then v * s_h * w_out in f32 instead of its bf16 rounding, so its sums differ
// from the unfused kernels' in the last bits (within bf16 rounding of the output).
constexpr int kStreamBlocksPerSm = 2;
constexpr int kStreamMaxItems = 64;
constexpr size_t kStreamMaxSmem = 96u << 10;

// KU: loads per lane per row of an item. Every item's loads are issued one item ahead. Measured
// (bench/NOTES-cuda.md run 10): fewer registers (KU = 5, no look-ahead for gated items, 3-4
// blocks per SM so that the next kernel's blocks fit beside these) lost 15% on decode_b1.
// ARGMAX: the LM head's greedy pick (GemvFusion::amax_id; M = 1, f32 out, DEFER), a variant of
// its own so that the kernel without it keeps its code.
// ILV (one row per item, N a multiple of 8): the rows in tiles of 8, one per warp, the tiles dealt
// to the blocks in turn instead of a contiguous run of rows per block, so that the grid reads one
// window of W at a time and every block has the same number of rows (+-8): the LM head's greedy
// pick, which waits for the last block, then costs nothing over the plain LM head (run 26).
// BPS: blocks per SM for the launch bounds; the launch makes the grid that many per SM.
template <int M, class TO, bool NORM, bool GATED, int KU, bool XF, bool DEFER, bool ARGMAX,
          bool ILV = false, int BPS = kStreamBlocksPerSm>
__global__ void __launch_bounds__(256, BPS) gemv_stream_kernel(GemvArgs a) {
  static_assert(!DEFER || (M == 1 && NORM && XF), "DEFER: M = 1 with the norm, x in f32");
  static_assert(!ARGMAX || (DEFER && std::is_same_v<TO, float> && !GATED), "ARGMAX: LM heads");
  constexpr int R = GATED ? 2 : 1;  // rows per item
  __shared__ float red[kStreamMaxItems][R][M];
  __shared__ float nred[32];
  __shared__ int is_last;
  extern __shared__ __align__(16) unsigned char stream_smem[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int K8 = a.K8, wpr = a.wpr;
  const int rb0 = static_cast<int>(static_cast<int64_t>(a.N) * blockIdx.x / gridDim.x);
  const int rb1 = static_cast<int>(static_cast<int64_t>(a.N) * (blockIdx.x + 1) / gridDim.x);
  const int items =
      ILV ? ((a.N / 8 - static_cast<int>(blockIdx.x) + static_cast<int>(gridDim.x) - 1) /
             static_cast<int>(gridDim.x)) *
                8
          : (rb1 - rb0) * wpr;
  // The output row of item `it` (with ILV: tile it / 8 of this block, its row it % 8).
  auto row_of = [&](int it) {
    if constexpr (ILV) {
      return ((it >> 3) * static_cast<int>(gridDim.x) + static_cast<int>(blockIdx.x)) * 8 +
             (it & 7);
    } else {
      return rb0 + it / wpr;
    }
  };
  const int sl = warp % wpr;
  const int lo = static_cast<int>(static_cast<int64_t>(K8) * sl / wpr);
  const int hi = static_cast<int>(static_cast<int64_t>(K8) * (sl + 1) / wpr);
  const uint4* W4 = reinterpret_cast<const uint4*>(a.W);
  uint4 cur[R][KU], nxt[R][KU];
  auto load = [&](uint4(&buf)[R][KU], int it) {
    const int64_t row = row_of(it);
#pragma unroll
    for (int h = 0; h < R; ++h) {
      const uint4* wr = W4 + (row + h * a.up) * K8;
#pragma unroll
      for (int u = 0; u < KU; ++u) {
        const int c = lo + lane + 32 * u;
        if (c < hi) buf[h][u] = __ldcs(wr + c);
      }
    }
  };
  int it = warp;
  int ticket = 0;
  if (it < items) load(cur, it);
  // The deferred norm's weights before the wait where registers allow (not with the gated pair's
  // loads in flight: 127 registers already).
  DeferWeights dw;
  if constexpr (DEFER && !GATED) dw.load(a.f, K8 * 8);
  pdl_wait();
  pdl_trigger();
  const bf16* x = a.x;
  int64_t xs = a.xs;
  float s_y = 1.f, s_h = 1.f;  // DEFER: the norm's scales
  if constexpr (DEFER) {
    if constexpr (GATED) dw.load(a.f, K8 * 8);
    gemv_defer_prologue(a.f, K8 * 8, stream_smem, nred, s_y, s_h, dw);
    if (tid == 0) ticket = atomicAdd(a.f.counter, 1);
  } else if constexpr (NORM) {
    gemv_norm_prologue<M>(a.f, K8 * 8, stream_smem, nred);
    // This block has read the old residual: take a ticket now, look at it at the end (the
    // atomic's round trip overlaps the reductions instead of delaying them).
    if (tid == 0) ticket = atomicAdd(a.f.counter, 1);
    x = reinterpret_cast<const bf16*>(stream_smem);
    xs = K8 * 8;
  }
  // XF: x as f32 in shared memory [M][K], each row in two planes (x_plane_index; after the
  // norm's bytes), converted once per block.
  // DEFER: P at xf, Q after it (written by the prologue).
  float* xf =
      reinterpret_cast<float*>(stream_smem + (NORM && !DEFER ? gemv_norm_bytes(M, K8 * 8) : 0));
  const float* xq = xf + K8 * 8;
  if constexpr (XF && !DEFER) {
#pragma unroll 4
    for (int i = tid; i < M * K8; i += 256) {
      const int m = i / K8, c = i - m * K8;
      const uint4 v = NORM ? reinterpret_cast<const uint4*>(x + m * xs)[c]
                           : __ldg(reinterpret_cast<const uint4*>(x + m * xs) + c);
      float4* d = reinterpret_cast<float4*>(xf + static_cast<size_t>(m) * K8 * 8) + c;
      widen_bf16x8(v, d[0], d[K8]);  // the two planes (x_plane_index)
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
    const TO v = gemv_store<TO, GATED>(a, m, row, g, u);
    if constexpr (ARGMAX) argmax_take(v, row, amax_v, amax_i);
  };
  auto reduce_item = [&](const uint4(&cur)[R][KU], int it) {
    float acc[R][M], acc2[R][M];
#pragma unroll
    for (int h = 0; h < R; ++h)
#pragma unroll
      for (int m = 0; m < M; ++m) acc[h][m] = acc2[h][m] = 0.f;
#pragma unroll
    for (int u = 0; u < KU; ++u) {
      const int c = lo + lane + 32 * u;
      if (c < hi) {
#pragma unroll
        for (int m = 0; m < M; ++m) {
          if constexpr (DEFER) {
            // acc: w . P, acc2: w . Q (one chain each)
            const float4* pv = reinterpret_cast<const float4*>(xf);
            const float4* qv = reinterpret_cast<const float4*>(xq);
            const float4 p0 = pv[c], p1 = pv[K8 + c], q0 = qv[c], q1 = qv[K8 + c];
#pragma unroll
            for (int h = 0; h < R; ++h) dot8pq(cur[h][u], p0, p1, q0, q1, acc[h][m], acc2[h][m]);
          } else if constexpr (XF) {
            const float4* xv =
                reinterpret_cast<const float4*>(xf + static_cast<size_t>(m) * K8 * 8);
            const float4 x0 = xv[c], x1 = xv[K8 + c];
#pragma unroll
            for (int h = 0; h < R; ++h) dot8f(cur[h][u], x0, x1, acc[h][m], acc2[h][m]);
          } else {
            const uint4 xv = NORM ? reinterpret_cast<const uint4*>(x + m * xs)[c]
                                  : __ldg(reinterpret_cast<const uint4*>(x + m * xs) + c);
#pragma unroll
            for (int h = 0; h < R; ++h) acc[h][m] += dot8(cur[h][u], xv);
          }
        }
      }
    }
    if constexpr (DEFER) {
#pragma unroll
      for (int h = 0; h < R; ++h)
#pragma unroll
        for (int m = 0; m < M; ++m) acc[h][m] = __fmaf_rn(s_y, acc2[h][m], acc[h][m]);
    } else if constexpr (XF) {
#pragma unroll
      for (int h = 0; h < R; ++h)
#pragma unroll
        for (int m = 0; m < M; ++m) acc[h][m] += acc2[h][m];
    }
#pragma unroll
    for (int h = 0; h < R; ++h)
#pragma unroll
      for (int m = 0; m < M; ++m) acc[h][m] = warp_sum(acc[h][m]);
    if (lane == 0) {
      if (wpr == 1) {
#pragma unroll
        for (int m = 0; m < M; ++m) store(m, row_of(it), acc[0][m], GATED ? acc[1][m] : 0.f);
      } else {
#pragma unroll
        for (int h = 0; h < R; ++h)
#pragma unroll
          for (int m = 0; m < M; ++m) red[it][h][m] = acc[h][m];
      }
    }
  };
  for (; it < items; it += 8) {
    // The next item's loads go out before this one is reduced (measured faster than two
    // alternating buffers, bench/NOTES-cuda.md run 10).
    if (it + 8 < items) load(nxt, it + 8);
    reduce_item(cur, it);
#pragma unroll
    for (int h = 0; h < R; ++h)
#pragma unroll
      for (int u = 0; u < KU; ++u) cur[h][u] = nxt[h][u];
  }
  if (wpr > 1) {
    __syncthreads();
    for (int e = tid; e < (rb1 - rb0) * M; e += 256) {
      const int i = e / M, m = e % M;
      float v[R];
#pragma unroll
      for (int h = 0; h < R; ++h) {
        float t = 0.f;
        for (int j = 0; j < wpr; ++j) t += red[i * wpr + j][h][m];
        v[h] = t;
      }
      store(m, rb0 + i, v[0], GATED ? v[R - 1] : 0.f);
    }
  }
  if constexpr (DEFER) {
    gemv_defer_writeback(a.f, K8 * 8, stream_smem, ticket, &is_last, s_y, s_h);
  } else if constexpr (NORM) {
    gemv_norm_writeback<M>(a.f, K8 * 8, stream_smem, ticket, &is_last);
  }
  if constexpr (ARGMAX) gemv_argmax_finish(a.f, amax_v, amax_i);
}

bool stream_xf_enabled() {
  static const bool on = switch_on("TESSERA_GEMV_XF");
  return on;
}

// Slices per row for the stream GEMV (`rows` output rows or pairs of K inputs), or 0 when the
// shape does not fit it: as few as keep each lane's loads within ku, doubled while there are
// fewer items than half the warps (so that each warp's loads are a useful size).
int stream_wpr(int64_t rows, int64_t K, int sms, int ku) {
  const int64_t K8 = K / 8, G = static_cast<int64_t>(sms) * kStreamBlocksPerSm;
  int wpr = 1;
  while (wpr < 8 && K8 > 32LL * ku * wpr) wpr *= 2;
  if (K8 > 32LL * ku * wpr) return 0;
  while (wpr < 8 && rows * wpr * 2 <= G * 8 && K8 / (wpr * 2) >= 32) wpr *= 2;
  if (wpr > 1 && ((rows + G - 1) / G) * wpr > kStreamMaxItems) return 0;
  return wpr;
}

template <int M, class TO, bool NORM, bool GATED, int KU, bool XF, bool DEFER = false,
          bool ARGMAX = false, bool ILV = false, int BPS = kStreamBlocksPerSm>
void launch_stream_k(const GemvArgs& a, unsigned grid, size_t smem, cudaStream_t st) {
  static const bool configured = [] {
    TS_CUDA(cudaFuncSetAttribute(
        gemv_stream_kernel<M, TO, NORM, GATED, KU, XF, DEFER, ARGMAX, ILV, BPS>,
        cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kStreamMaxSmem)));
    return true;
  }();
  (void)configured;
  launch(gemv_stream_kernel<M, TO, NORM, GATED, KU, XF, DEFER, ARGMAX, ILV, BPS>, grid, 256, smem,
         st, "linear (gemv)", a);
}

// Three blocks per SM (80 registers: no spill for the plain GEMV, 8 bytes for the LM head's) where
// the kernel's registers allow it at M = 1, bench/NOTES-cuda.md run 26:
//  - the plain GEMV with x in f32 (down of a 1B model): its 1,152 rows at 4 slices are 3 rounds
//    of items per warp on 264 blocks of 4-5 rows but 2 on 396 blocks of 2-3 (TESSERA_GEMV_PLAIN3=0
//    keeps two blocks: decode_b1 1,179-1,182 -> 1,202 tok/s);
//  - the LM head with its greedy pick, rows interleaved (ILV; TESSERA_LM_ILV=0 keeps contiguous
//    rows on two blocks: 147.3 -> 143.2 us per LM head, decode_b1 1,181 -> 1,188).
constexpr int kStreamBlocksPerSm3 = 3;
bool stream_plain3_enabled() {
  static const bool on = switch_on("TESSERA_GEMV_PLAIN3");
  return on;
}
bool stream_lm_ilv_enabled() {
  static const bool on = switch_on("TESSERA_LM_ILV");
  return on;
}
// The grid at three blocks per SM from the two-per-SM `grid` launch_gemv_stream made, or 0 when
// that grid was cut to fewer blocks or `units` (rows, or ILV's tiles) would leave blocks idle.
unsigned stream_grid3(unsigned grid, int64_t units) {
  const unsigned g = grid / kStreamBlocksPerSm * kStreamBlocksPerSm3;
  return units >= static_cast<int64_t>(g) ? g : 0;
}

// Whether the deferred norm prologue (DEFER) takes a norm-fused GEMV of K inputs at M = 1.
bool stream_defer_fits(int64_t K) {
  static const bool on = switch_on("TESSERA_GEMV_DEFER");
  return on && stream_xf_enabled() && gemv_defer_bytes(K) <= kStreamMaxSmem;
}

// x goes to shared memory as f32 at M = 1 when it fits (TESSERA_GEMV_XF=0 turns that off); with the
// norm there, the deferred prologue (TESSERA_GEMV_DEFER=0 turns it off: decode_b1 1,068-1,069 ->
// 1,101 tok/s, bench/NOTES-cuda.md run 23).
template <int M, class TO, bool NORM, bool GATED, int KU>
void launch_stream_ku(const GemvArgs& a, unsigned grid, size_t smem, cudaStream_t st) {
  const size_t xf = static_cast<size_t>(M) * a.K8 * 8 * 4;
  if constexpr (M == 1) {  // at M = 2 it measured slower (gate_up 12.7 -> 14.3 us, run 15)
    if constexpr (NORM) {
      const int64_t K = static_cast<int64_t>(a.K8) * 8;
      if (stream_defer_fits(K)) {
        if constexpr (std::is_same_v<TO, float> && !GATED) {
          if (a.f.amax_id) {
            const unsigned grid3 = stream_grid3(grid, a.N / 8);
            if (stream_lm_ilv_enabled() && a.wpr == 1 && a.N % 8 == 0 && grid3 > 0) {
              // Three blocks per SM only with 5 load slots (K <= 1280): with 7 or 8 the kernel
              // spills 28-56 bytes at 80 registers.
              if constexpr (KU <= 5) {
                launch_stream_k<M, TO, NORM, GATED, KU, true, true, true, true,
                                kStreamBlocksPerSm3>(a, grid3, gemv_defer_bytes(K), st);
              } else {
                launch_stream_k<M, TO, NORM, GATED, KU, true, true, true, true>(
                    a, grid, gemv_defer_bytes(K), st);
              }
              return;
            }
            launch_stream_k<M, TO, NORM, GATED, KU, true, true, true>(a, grid, gemv_defer_bytes(K),
                                                                      st);
            return;
          }
        }
        launch_stream_k<M, TO, NORM, GATED, KU, true, true>(a, grid, gemv_defer_bytes(K), st);
        return;
      }
    }
    if (stream_xf_enabled() && smem + xf <= kStreamMaxSmem) {
      if constexpr (!NORM && !GATED && std::is_same_v<TO, bf16>) {
        const unsigned grid3 = stream_grid3(grid, a.N);
        if (stream_plain3_enabled() && grid3 > 0) {
          launch_stream_k<M, TO, NORM, GATED, KU, true, false, false, false, kStreamBlocksPerSm3>(
              a, grid3, smem + xf, st);
          return;
        }
      }
      launch_stream_k<M, TO, NORM, GATED, KU, true>(a, grid, smem + xf, st);
      return;
    }
  }
  launch_stream_k<M, TO, NORM, GATED, KU, false>(a, grid, smem, st);
}

// Gated items hold two rows: 5 loads per lane per row (K <= 1280 per slice). Other rows at M = 1
// take as many slots as their slice needs: 5 (qkv and the LM head of a 1B model, K = 1152: 4.5
// loads per lane) or 7 (down's 216-load slices) instead of 8, whose unused guarded loads cost
// decode_b1 3% (run 23; TESSERA_GEMV_KU5=0 / TESSERA_GEMV_KU7=0 keep 8); at M >= 2 (measured
// with 8 only) and for longer slices, 8.
template <int M, class TO, bool NORM, bool GATED>
void launch_stream_t(const GemvArgs& a, unsigned grid, size_t smem, cudaStream_t st) {
  if constexpr (GATED) {
    launch_stream_ku<M, TO, NORM, GATED, 5>(a, grid, smem, st);
  } else if constexpr (M == 1) {
    static const bool ku5 = switch_on("TESSERA_GEMV_KU5");
    static const bool ku7 = switch_on("TESSERA_GEMV_KU7");
    const int slice = (a.K8 + a.wpr - 1) / a.wpr;
    if (ku5 && slice <= 32 * 5) {
      launch_stream_ku<M, TO, NORM, GATED, 5>(a, grid, smem, st);
    } else if (ku7 && slice <= 32 * 7) {
      launch_stream_ku<M, TO, NORM, GATED, 7>(a, grid, smem, st);
    } else {
      launch_stream_ku<M, TO, NORM, GATED, kU>(a, grid, smem, st);
    }
  } else {
    launch_stream_ku<M, TO, NORM, GATED, kU>(a, grid, smem, st);
  }
}

template <class TO>
void launch_gemv_stream(int M, GemvArgs a, bool norm, bool gated, cudaStream_t st, int sms) {
  const unsigned grid =
      static_cast<unsigned>(std::min<int64_t>(static_cast<int64_t>(sms) * kStreamBlocksPerSm, a.N));
  const size_t smem = norm ? gemv_norm_bytes(M, static_cast<int64_t>(a.K8) * 8) : 0;
  dispatch_gemv<TO>(M, norm, gated, [&]<int M_, class TO_, bool NORM, bool GATED>() {
    launch_stream_t<M_, TO_, NORM, GATED>(a, grid, smem, st);
  });
}

GemvArgs stream_args(Tensor x, const void* w, int64_t N, int64_t K, const float* bias, Tensor out,
                     const GemvFusion* f, int sms) {
  GemvArgs a;
  const bool gated = f && f->gated;
  a.W = static_cast<const bf16*>(w);
  a.N = static_cast<int>(gated ? N / 2 : N);
  a.K8 = static_cast<int>(K / 8);
  a.up = gated ? N / 2 : 0;
  a.wpr = stream_wpr(a.N, K, sms, gated ? 5 : kU);
  a.x = x.ptr<const bf16>();
  a.xs = x.stride;
  a.bias = bias;
  a.out = out.data;
  a.os = out.stride;
  if (f) a.f = *f;
  return a;
}

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

LinearOps::LinearOps() {
  check_lt(cublasLtCreate(&handle_), "create");
  workspace_ = std::make_unique<CudaBuffer>(kWorkspaceBytes, "cuBLASLt workspace");
  if (const char* e = std::getenv("TESSERA_GEMV_MAX_M")) gemv_max_m_ = std::atoi(e);
  int dev = 0;
  TS_CUDA(cudaGetDevice(&dev));
  TS_CUDA(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, dev));
}

LinearOps::~LinearOps() {
  for (auto& [k, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.op);
  }
  if (handle_) cublasLtDestroy(handle_);
}

LinearOps::Plan& LinearOps::plan(int64_t M, int64_t N, int64_t K, int64_t ldx, int64_t ldo,
                                 DType out_dt, int al_w, int al_x, int al_o) {
  Key key{M, N, K, ldx, ldo, static_cast<int>(out_dt), al_w, al_x, al_o};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Plan p;
  check_lt(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
  // Column-major view: D^T[N, M] = W[K, N]^T (op T) * X^T[K, M].
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
           "transa");
  check_lt(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
           "transb");
  const cudaDataType_t odt = out_dt == DType::f32 ? CUDA_R_32F : CUDA_R_16BF;
  check_lt(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, K, N, K), "layout a");
  check_lt(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, K, M, ldx), "layout b");
  check_lt(cublasLtMatrixLayoutCreate(&p.c, odt, N, M, ldo), "layout c");
  cublasLtMatmulPreference_t pref;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "pref");
  const uint64_t ws = kWorkspaceBytes;
  const uint32_t aw = al_w, ax = al_x, ao = al_o;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                       sizeof ws);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aw,
                                       sizeof aw);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ax,
                                       sizeof ax);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ao,
                                       sizeof ao);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ao,
                                       sizeof ao);
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  cublasStatus_t s = CUBLAS_STATUS_NOT_SUPPORTED;
  // M in (8, 512) and not a power of two: the algorithm picked for the next power of two, if it
  // runs this shape. cuBLASLt loads a kernel the first time it runs it (~2.5 ms per linear shape
  // on the H200), so a prompt of a new length paid that in its time to first token; the engine's
  // warm-up runs the powers of two (bench/NOTES-cuda.md run 22).
  if (M > 8 && M < 512 && (M & (M - 1)) != 0) {
    int64_t mb = 16;
    while (mb < M) mb *= 2;
    const cublasLtMatmulAlgo_t algo = plan(mb, N, K, ldx, ldo, out_dt, al_w, al_x, al_o).algo;
    if (cublasLtMatmulAlgoCheck(handle_, p.op, p.a, p.b, p.c, p.c, &algo, &res) ==
            CUBLAS_STATUS_SUCCESS &&
        res.workspaceSize <= kWorkspaceBytes) {
      res.algo = algo;
      s = CUBLAS_STATUS_SUCCESS;
      found = 1;
    }
  }
  if (found == 0)
    s = cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.a, p.b, p.c, p.c, pref, 1, &res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.op);
    throw Error(ErrorKind::internal, "cuBLASLt found no algorithm for a " + std::to_string(M) +
                                         "x" + std::to_string(N) + "x" + std::to_string(K) +
                                         " GEMM");
  }
  p.algo = res.algo;
  return plans_.emplace(key, p).first->second;
}

void LinearOps::lt_matmul(Tensor x, const void* w, int64_t N, int64_t K, Tensor out,
                          cudaStream_t st) {
  const int64_t M = x.rows;
  Plan& p = plan(M, N, K, x.stride, out.stride, out.dtype, alignment_of(w), alignment_of(x.data),
                 alignment_of(out.data));
  const float alpha = 1.f, beta = 0.f;
  check_lt(cublasLtMatmul(handle_, p.op, &alpha, w, p.a, x.data, p.b, &beta, out.data, p.c,
                          out.data, p.c, &p.algo, workspace_->data(), kWorkspaceBytes, st),
           "matmul");
}

int LinearOps::choose_path(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K,
                           Tensor out) const {
  const int64_t M = x.rows;
  const bool bf = w_dt == DType::bf16 && x.dtype == DType::bf16 &&
                  (out.dtype == DType::bf16 || out.dtype == DType::f32);
  const bool aligned8 =
      K % 8 == 0 && x.stride % 8 == 0 && alignment_of(x.data) >= 16 && alignment_of(w) >= 16;
  const bool gemv_ok = bf && aligned8 && M <= kMaxGemvM;
  const bool lt_ok = bf && aligned8 && out.stride % (out.dtype == DType::f32 ? 4 : 8) == 0 &&
                     alignment_of(out.data) >= 16;
  if (force_path_ == 1 && gemv_ok) return 1;
  if (force_path_ == 2 && lt_ok) return 2;
  if (force_path_ != 0) return 3;
  // GEMV where it beat cuBLASLt in bench/NOTES-cuda.md: small layers up to gemv_max_m rows,
  // large ones (> 4M weights) at M <= 2, never the LM head (cuBLASLt reads it at 4.1 TB/s).
  const bool gemv_wins =
      M <= gemv_max_m_ && N < 65536 && (static_cast<double>(N) * K <= kSmallLayerWeights || M <= 2);
  return gemv_ok && (gemv_wins || !lt_ok) ? 1 : lt_ok ? 2 : 3;
}

bool LinearOps::gemv_fusable(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, Tensor out,
                             const GemvFusion& f) const {
  const int64_t M = x.rows;
  // An LM head (N >= 64K, which choose_path leaves to cuBLASLt) at M = 1 after its norm: the
  // streaming GEMV with the deferred norm as its prologue, f32 logits, instead of the norm kernel
  // and cuBLASLt (bench/NOTES-cuda.md run 23; TESSERA_LM_GEMV=0 leaves it to those).
  static const bool lm_on = switch_on("TESSERA_LM_GEMV");
  const bool lm_head = lm_on && M == 1 && f.norm && !f.gated && N >= 65536 && force_path_ == 0 &&
                       stream_defer_fits(K);
  if (M < 1 || M > kMaxGemvM || N > std::numeric_limits<int>::max()) return false;
  if (out.dtype != DType::bf16 && !(lm_head && out.dtype == DType::f32)) return false;
  if (f.gated && (N % 2 != 0 || out.cols != N / 2)) return false;
  if (!f.gated && out.cols != N) return false;
  Tensor probe = out;
  probe.cols = N;  // the path check looks at the weight's shape
  const int path = choose_path(x, w, w_dt, N, K, probe);
  if (path != 1 && !(lm_head && path == 2)) return false;  // 2: its operands suit a GEMV too
  if (out.dtype == DType::bf16 && use_mma(M, f.gated ? N / 2 : N, K, f.norm, f.gated)) return true;
  if (f.norm && gemv_norm_bytes(static_cast<int>(M), K) > kStreamMaxSmem) return false;
  return stream_wpr(f.gated ? N / 2 : N, K, sms_, f.gated ? 5 : kU) > 0;
}

// The tensor-core GEMV: everywhere it fits with TESSERA_GEMV=mma; by default for 2 <= M <= 8 on
// layers of <= 4M weights, where it measured faster than the streaming and one-row kernels
// (bench/NOTES-cuda.md run 15: qkv M = 2 2.72 vs 3.13 us, M = 8 2.76 vs 4.55; o M = 8 2.51 vs
// 3.72). At M = 1 and on large layers its 8-row tiles read W in 64-byte pieces per row, which
// the L2 and HBM serve at half rate (gate_up M = 1 19.3 vs 10.9 us).
bool LinearOps::use_mma(int64_t M, int64_t rows, int64_t K, bool norm, bool gated) const {
  const double weights = static_cast<double>(rows) * K * (gated ? 2 : 1);
  const bool wanted =
      gemv_kind_ == 4 || (gemv_kind_ == 1 && M >= 2 && weights <= kSmallLayerWeights);
  return wanted && gemv_mma_fits(static_cast<int>(M), rows, K, norm, sms_);
}

L2Prefetch gated_prefetch(const void* w, int64_t rows, int64_t K, int percent, int skip_percent,
                          int sms) {
  if (percent <= 0 || K % 64 != 0 || rows % 2 != 0) return {};
  const int64_t N = rows / 2;  // the streaming GEMV's rows: [gate; up] pairs
  const int G =
      static_cast<int>(std::min<int64_t>(static_cast<int64_t>(sms) * kStreamBlocksPerSm, N));
  const int64_t per = (N + G - 1) / G;
  L2Prefetch p;
  p.W = static_cast<const bf16*>(w);
  p.N = N;
  p.K = static_cast<int>(K);
  p.G = G;
  p.take = static_cast<int>((per * std::min(percent, 100) + 99) / 100);
  p.skip = static_cast<int>(per * std::clamp(skip_percent, 0, 100) / 100);
  return p;
}

void LinearOps::linear(Tensor x, const void* w, DType w_dt, int64_t N, int64_t K, const float* bias,
                       Tensor out, cudaStream_t st, const GemvFusion* f, const L2Prefetch& pf) {
  const int64_t M = x.rows;
  if (M == 0 || N == 0) return;
  if (f) {
    TS_ASSERT(x.cols == K && gemv_fusable(x, w, w_dt, N, K, out, *f));
    const GemvArgs a = stream_args(x, w, N, K, bias, out, f, sms_);
    if (out.dtype == DType::f32) {  // an LM head (gemv_fusable)
      TS_ASSERT(!f->amax_id || sms_ * kStreamBlocksPerSm3 <= kGemvArgmaxMaxBlocks);
      launch_gemv_stream<float>(1, a, true, false, st, sms_);
      return;
    }
    if (use_mma(M, a.N, K, f->norm, f->gated)) {
      launch_gemv_mma(static_cast<int>(M), a, f->norm, f->gated, DType::bf16, st, sms_);
    } else {
      launch_gemv_stream<bf16>(static_cast<int>(M), a, f->norm, f->gated, st, sms_);
    }
    return;
  }
  TS_ASSERT(x.cols == K && out.cols == N && out.rows >= M);
  const int path = choose_path(x, w, w_dt, N, K, out);
  if (path == 1 && use_mma(M, N, K, false, false)) {
    launch_gemv_mma(static_cast<int>(M), stream_args(x, w, N, K, bias, out, nullptr, sms_), false,
                    false, out.dtype, st, sms_);
    return;
  }
  if (path == 1) {
    // The streaming kernel where it measured faster (large layers, bench/NOTES-cuda.md run 10),
    // the one-row-per-warp kernel for small ones (all loads in flight at once).
    const bool stream =
        gemv_kind_ == 3 || (gemv_kind_ != 0 && static_cast<double>(N) * K > kSmallLayerWeights);
    if (stream && N <= std::numeric_limits<int>::max() && stream_wpr(N, K, sms_, kU) > 0) {
      dispatch_float(out.dtype, [&](auto to) {
        using TO = decltype(to);
        launch_gemv_stream<TO>(static_cast<int>(M),
                               stream_args(x, w, N, K, bias, out, nullptr, sms_), false, false, st,
                               sms_);
      });
      return;
    }
    if (out.dtype == DType::f32) {
      launch_gemv<float>(static_cast<int>(M), static_cast<const bf16*>(w), N, K,
                         x.ptr<const bf16>(), x.stride, bias, out.ptr<float>(), out.stride, st, pf);
    } else {
      launch_gemv<bf16>(static_cast<int>(M), static_cast<const bf16*>(w), N, K, x.ptr<const bf16>(),
                        x.stride, bias, out.ptr<bf16>(), out.stride, st, pf);
    }
    return;
  }
  if (path == 2) {
    lt_matmul(x, w, N, K, out, st);
    if (bias) {
      dispatch_float(out.dtype, [&](auto to) {
        using TO = decltype(to);
        launch(add_bias_kernel<TO>, std::min<unsigned>(ceil_div(M * N, 256), 132 * 16), 256, 0, st,
               "linear", out.ptr<TO>(), out.stride, M, N, bias);
        TS_CUDA_LAUNCH("add_bias");
      });
    }
    return;
  }
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

}  // namespace tessera::cuda
