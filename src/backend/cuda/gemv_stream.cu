// The persistent streaming decode GEMV (gemv.h): out[m, r] = W[r] . x[m] (+ bias) for M <= 8,
// W [N, K] bf16, fp32 accumulation, with the decoder stages it can take over (GemvFusion: the
// add_rms_norm prologue, the gated epilogue, the LM head's greedy pick). The dispatch (linear.cpp)
// takes it for large layers and for the fusions the tensor-core kernel does not take.
// ref: cpu/linear.cpp (the contract; fp32 accumulation, one rounding on the store).
#include <algorithm>
#include <type_traits>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_fusion.cuh"
#include "core/check.h"

namespace tessera::cuda {

namespace {

constexpr size_t kStreamMaxSmem = 96u << 10;

// w (8 bf16) . x (8 f32, two float4) into two accumulators (even and odd k): a bf16 becomes an
// f32 with one shift or mask, so a 16-byte weight costs 8 ALU + 8 FMA instead of ~29 with bf16
// x (the GEMVs at M = 1 are bound by instruction issue, not by memory).
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

// Persistent: 2 blocks per SM (3 for the M = 1 kernels whose registers allow it:
// kStreamBlocksPerSm3), each owning a contiguous run of output rows (or ILV's tiles), its 8 warps
// taking (row, K slice) items of it in turn (a warp's slice is fixed: wpr divides 8). Each lane
// keeps up to KU 16-byte evict-first loads of the next item in flight while it reduces the current
// one, so the SM's loads never drain between rows (the one-row-per-warp grid of gemv_rows.cu ends
// every row with a round trip and a block exit). Slices of a row are summed through shared
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
constexpr int kStreamMaxItems = 64;

// KU: loads per lane per row of an item. Every item's loads are issued one item ahead, gated ones
// too: fewer registers (no look-ahead for gated items, 3-4 blocks per SM so that the next kernel's
// blocks fit beside these) measured slower on decode_b1.
// ARGMAX: the LM head's greedy pick (GemvFusion::amax_id; M = 1, f32 out, DEFER), a variant of
// its own so that the kernel without it keeps its code.
// ILV (one row per item, N a multiple of 8): the rows in tiles of 8, one per warp, the tiles dealt
// to the blocks in turn instead of a contiguous run of rows per block, so that the grid reads one
// window of W at a time and every block has the same number of rows (+-8): the LM head's greedy
// pick, which waits for the last block, then costs nothing over the plain LM head.
// BPS: blocks per SM for the launch bounds; the launch makes the grid that many per SM.
// One kernel of ~190 lines: its phases (the loads issued before the PDL wait, the norm prologue,
// the x copy, the item loop with its look-ahead, the slice sums, the write-back and the pick) share
// the registers and shared memory that each variant's launch bounds are set for, and every
// variant is this one body with its template flags.
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
    // alternating buffers).
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

}  // namespace

// As few slices as keep each lane's loads within ku, doubled while there are fewer items than half
// the warps (so that each warp's loads are a useful size).
int stream_wpr(int64_t rows, int64_t K, int sms, int ku) {
  const int64_t K8 = K / 8, G = static_cast<int64_t>(sms) * kStreamBlocksPerSm;
  int wpr = 1;
  while (wpr < 8 && K8 > 32LL * ku * wpr) wpr *= 2;
  if (K8 > 32LL * ku * wpr) return 0;
  while (wpr < 8 && rows * wpr * 2 <= G * 8 && K8 / (wpr * 2) >= 32) wpr *= 2;
  if (wpr > 1 && ((rows + G - 1) / G) * wpr > kStreamMaxItems) return 0;
  return wpr;
}

namespace {

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
// the kernel's registers allow it at M = 1:
//  - the plain GEMV with x in f32 (down of a 1B model): its 1,152 rows at 4 slices are 3 rounds
//    of items per warp on 264 blocks of 4-5 rows but 2 on 396 blocks of 2-3;
//  - the LM head with its greedy pick, rows interleaved (ILV), with 5 load slots (K <= 1280):
//    with 7 or 8 that variant spills 28-56 bytes at 80 registers, so it keeps two blocks.
// The grid at three blocks per SM from the two-per-SM `grid` launch_gemv_stream made, or 0 when
// that grid was cut to fewer blocks or `units` (rows, or ILV's tiles) would leave blocks idle.
unsigned stream_grid3(unsigned grid, int64_t units) {
  const unsigned g = grid / kStreamBlocksPerSm * kStreamBlocksPerSm3;
  return units >= static_cast<int64_t>(g) ? g : 0;
}

}  // namespace

// Whether the deferred norm prologue (DEFER) takes a norm-fused GEMV of K inputs at M = 1.
bool stream_defer_fits(int64_t K) {
  return gemv_defer_bytes(K) <= kStreamMaxSmem;
}

bool stream_norm_fits(int M, int64_t K) {
  return gemv_norm_bytes(M, K) <= kStreamMaxSmem;
}

namespace {

// x goes to shared memory as f32 at M = 1 (at M = 2 that measured slower on gate_up); with the norm
// there, the deferred prologue where its shared memory fits (the LM head's always does:
// gemv_fusable). Without the norm x always fits: stream_wpr keeps K <= 32 * 8 * 8 * 8 = 16384.
template <class TO, bool GATED, int KU>
void launch_stream_norm1(const GemvArgs& a, unsigned grid, size_t smem, cudaStream_t st) {
  const int64_t K = static_cast<int64_t>(a.K8) * 8;
  if constexpr (std::is_same_v<TO, float>) TS_ASSERT(stream_defer_fits(K));
  if (stream_defer_fits(K)) {
    if constexpr (std::is_same_v<TO, float> && !GATED) {
      if (a.f.amax_id) {
        const unsigned grid3 = stream_grid3(grid, a.N / 8);
        if (a.wpr == 1 && a.N % 8 == 0 && grid3 > 0) {
          if constexpr (KU <= 5) {
            launch_stream_k<1, TO, true, GATED, KU, true, true, true, true, kStreamBlocksPerSm3>(
                a, grid3, gemv_defer_bytes(K), st);
          } else {
            launch_stream_k<1, TO, true, GATED, KU, true, true, true, true>(
                a, grid, gemv_defer_bytes(K), st);
          }
          return;
        }
        launch_stream_k<1, TO, true, GATED, KU, true, true, true>(a, grid, gemv_defer_bytes(K), st);
        return;
      }
    }
    launch_stream_k<1, TO, true, GATED, KU, true, true>(a, grid, gemv_defer_bytes(K), st);
    return;
  }
  if constexpr (!std::is_same_v<TO, float>) {
    const size_t xf = static_cast<size_t>(K) * 4;
    if (smem + xf <= kStreamMaxSmem) {
      launch_stream_k<1, TO, true, GATED, KU, true>(a, grid, smem + xf, st);
      return;
    }
    launch_stream_k<1, TO, true, GATED, KU, false>(a, grid, smem, st);
  }
}

template <class TO, bool GATED, int KU>
void launch_stream_plain1(const GemvArgs& a, unsigned grid, cudaStream_t st) {
  static_assert(32 * kStreamLoads * 8 * 8 * sizeof(float) <= kStreamMaxSmem);
  const size_t xf = static_cast<size_t>(a.K8) * 8 * 4;
  if constexpr (!GATED && std::is_same_v<TO, bf16>) {
    const unsigned grid3 = stream_grid3(grid, a.N);
    if (grid3 > 0) {
      launch_stream_k<1, TO, false, false, KU, true, false, false, false, kStreamBlocksPerSm3>(
          a, grid3, xf, st);
      return;
    }
  }
  launch_stream_k<1, TO, false, GATED, KU, true>(a, grid, xf, st);
}

template <int M, class TO, bool NORM, bool GATED, int KU>
void launch_stream_ku(const GemvArgs& a, unsigned grid, size_t smem, cudaStream_t st) {
  if constexpr (M > 1) {
    launch_stream_k<M, TO, NORM, GATED, KU, false>(a, grid, smem, st);
  } else if constexpr (NORM) {
    launch_stream_norm1<TO, GATED, KU>(a, grid, smem, st);
  } else {
    launch_stream_plain1<TO, GATED, KU>(a, grid, st);
  }
}

// Gated items hold two rows: 5 loads per lane per row (K <= 1280 per slice). Other rows at M = 1
// take as many slots as their slice needs: 5 (qkv and the LM head of a 1B model, K = 1152: 4.5
// loads per lane) or 7 (down's 216-load slices) instead of 8, whose unused guarded loads are
// still issued; at M >= 2 (measured with 8 only) and for longer slices, 8.
template <int M, class TO, bool NORM, bool GATED>
void launch_stream_t(const GemvArgs& a, unsigned grid, size_t smem, cudaStream_t st) {
  if constexpr (GATED) {
    launch_stream_ku<M, TO, NORM, GATED, kStreamGatedLoads>(a, grid, smem, st);
  } else if constexpr (M == 1) {
    const int slice = (a.K8 + a.wpr - 1) / a.wpr;
    if (slice <= 32 * 5) {
      launch_stream_ku<M, TO, NORM, GATED, 5>(a, grid, smem, st);
    } else if (slice <= 32 * 7) {
      launch_stream_ku<M, TO, NORM, GATED, 7>(a, grid, smem, st);
    } else {
      launch_stream_ku<M, TO, NORM, GATED, kStreamLoads>(a, grid, smem, st);
    }
  } else {
    launch_stream_ku<M, TO, NORM, GATED, kStreamLoads>(a, grid, smem, st);
  }
}

template <class TO>
void launch_stream(int M, const GemvArgs& a, bool norm, bool gated, cudaStream_t st, int sms) {
  const unsigned grid =
      static_cast<unsigned>(std::min<int64_t>(static_cast<int64_t>(sms) * kStreamBlocksPerSm, a.N));
  const size_t smem = norm ? gemv_norm_bytes(M, static_cast<int64_t>(a.K8) * 8) : 0;
  dispatch_gemv<TO>(M, norm, gated, [&]<int M_, class TO_, bool NORM, bool GATED>() {
    launch_stream_t<M_, TO_, NORM, GATED>(a, grid, smem, st);
  });
}

}  // namespace

GemvArgs gemv_args(Tensor x, const void* w, int64_t N, int64_t K, const float* bias, Tensor out,
                   const GemvFusion* f, int sms) {
  GemvArgs a;
  const bool gated = f && f->gated;
  a.W = static_cast<const bf16*>(w);
  a.N = static_cast<int>(gated ? N / 2 : N);
  a.K8 = static_cast<int>(K / 8);
  a.up = gated ? N / 2 : 0;
  a.wpr = stream_wpr(a.N, K, sms, gated ? kStreamGatedLoads : kStreamLoads);
  a.x = x.ptr<const bf16>();
  a.xs = x.stride;
  a.bias = bias;
  a.out = out.data;
  a.os = out.stride;
  if (f) a.f = *f;
  return a;
}

void launch_gemv_stream(int M, const GemvArgs& a, bool norm, bool gated, DType out_dt,
                        cudaStream_t st, int sms) {
  dispatch_float(out_dt, [&](auto to) { launch_stream<decltype(to)>(M, a, norm, gated, st, sms); });
}

L2Prefetch gated_prefetch(const void* w, int64_t rows, int64_t K, int sms) {
  constexpr int percent = 30, skip_percent = 15;
  if (K % 64 != 0 || rows % 2 != 0) return {};
  const int64_t N = rows / 2;  // the streaming GEMV's rows: [gate; up] pairs
  const int G =
      static_cast<int>(std::min<int64_t>(static_cast<int64_t>(sms) * kStreamBlocksPerSm, N));
  const int64_t per = (N + G - 1) / G;
  L2Prefetch p;
  p.W = static_cast<const bf16*>(w);
  p.N = N;
  p.K = static_cast<int>(K);
  p.G = G;
  p.take = static_cast<int>((per * percent + 99) / 100);
  p.skip = static_cast<int>(per * skip_percent / 100);
  return p;
}

}  // namespace tessera::cuda
