// Decode GEMV on the tensor cores: out[m, r] = W[r] . x[m] for M <= 8 rows of x, W [N, K] bf16,
// fp32 accumulation, with the same fusions as the streaming GEMV (gemv_fusion.cuh).
//
// Why: on CUDA cores every 16 bytes of weight cost M x ~8 FMAs plus the conversions, so the
// GEMVs' time grows with M; here one 16-byte load per lane feeds two mma.m16n8k16 whatever M is.
// Not at M = 1 on large layers: an 8-row tile reads each row in 64-byte pieces, which the L2 and
// HBM serve at about half the rate of whole lines, so LinearOps::use_mma picks it for
// 2 <= M <= 8 on small layers.
//
// Layout: W is the mma's B operand (16 k x 8 n, n = 8 consecutive rows of W, a "tile"), x the
// A operand (rows m < M; rows >= M and 8..15 are zeros). Lane (g = lane / 4, t = lane % 4) loads
// one uint4 of W row g at k = 32 c + 8 t .. + 7 (chunk c of 32 k). A dot product may take its
// k in any order as long as x takes the same, so the uint4 goes in as-is: k pairs 0-1 and 2-3 as
// b0, b1 of one mma, 4-5 and 6-7 of a second, with the matching uint4 of x row g as a0, a2. The
// accumulator then holds C[m = g][n = 2 t, 2 t + 1] in c0, c1 of lane (g, t).
// Work: block b owns tiles [T b / G, T (b + 1) / G) (T = ceil(N / 8)); warp w takes K slice w of 8
// (CH / 8 chunks) of every tile of its block, streaming its (tile, chunk) steps through a ring of
// D loads in flight (the first D issued before the PDL wait); the 8 slices of each output are
// summed in shared memory in a fixed order (deterministic).
// ref: PTX ISA "Matrix fragments for mma.m16n8k16"; gemv_stream.cu (same contract).
#include <algorithm>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_fusion.cuh"
#include "backend/cuda/mma.cuh"

namespace tessera::cuda {

namespace {

constexpr int kSlices = 8;  // warps per block, one K slice each
constexpr int kBlocksPerSm = 2;
constexpr int kMinChunks = kSlices;  // K >= 256: every slice has a chunk
constexpr size_t kMaxSmem = 96u << 10;

int tiles_of(int64_t N) {
  return static_cast<int>((N + 7) / 8);
}
int grid_of(int64_t N, int sms) {
  return std::min(tiles_of(N), sms * kBlocksPerSm);
}
int max_tiles_per_block(int64_t N, int sms) {
  const int T = tiles_of(N), G = grid_of(N, sms);
  return (T + G - 1) / G;
}
size_t red_bytes(int M, int tiles, bool gated) {
  return static_cast<size_t>(tiles) * kSlices * (gated ? 2 : 1) * M * 8 * sizeof(float);
}

template <int M, class TO, bool NORM, bool GATED, int D>
__global__ void __launch_bounds__(256, kBlocksPerSm) gemv_mma_kernel(GemvArgs a) {
  constexpr int R = GATED ? 2 : 1;  // W rows per output (gate, up)
  extern __shared__ __align__(16) unsigned char mma_smem[];
  __shared__ float nred[32];
  __shared__ int is_last;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int K8 = a.K8, N = a.N, T = (N + 7) / 8;
  const int tb0 = static_cast<int>(static_cast<int64_t>(T) * blockIdx.x / gridDim.x);
  const int tb1 = static_cast<int>(static_cast<int64_t>(T) * (blockIdx.x + 1) / gridDim.x);
  const int ntiles = tb1 - tb0;
  const int CH = K8 / 4;  // chunks of 32 k (K % 32 == 0)
  const int c0 = CH * warp / kSlices, c1 = CH * (warp + 1) / kSlices;
  const int steps = ntiles * (c1 - c0);
  const uint4* W4 = reinterpret_cast<const uint4*>(a.W);
  // [ntiles][kSlices][R][M][8], after the norm prologue's bytes
  float* red = reinterpret_cast<float*>(mma_smem + (NORM ? gemv_norm_bytes(M, K8 * 8) : 0));

  // Step cursors (tile, chunk): the load cursor runs D steps ahead of the consume cursor. A slot
  // holds the step's W uint4 (R rows) and x uint4. Loads are predicated without an else (a
  // select would wait for the load): rows past N read row N - 1 (their sums are dropped), lanes
  // g >= M keep the zeros of x they start with, and a slot past the warp's last step is not
  // loaded (nor consumed).
  const uint4* x4 = reinterpret_cast<const uint4*>(a.x);
  int64_t xs8 = a.xs / 8;
  int lt = 0, lc = c0;
  auto advance = [&](int& tl, int& c) {
    if (++c == c1) {
      c = c0;
      ++tl;
    }
  };
  auto load_w = [&](uint4(&w)[R], int tl, int c) {
    const int row = min((tb0 + tl) * 8 + g, N - 1), col = c * 4 + t;
    if (tl < ntiles) {
#pragma unroll
      for (int h = 0; h < R; ++h) w[h] = __ldcs(W4 + (row + h * a.up) * K8 + col);
    }
  };
  auto load_x = [&](uint4& xv, int tl, int c) {
    if (tl < ntiles && g < M) xv = NORM ? x4[g * xs8 + c * 4 + t] : __ldg(x4 + g * xs8 + c * 4 + t);
  };
  uint4 wb[D][R], xb[D];
#pragma unroll
  for (int d = 0; d < D; ++d) {
    xb[d] = make_uint4(0, 0, 0, 0);
    load_w(wb[d], lt, lc);
    advance(lt, lc);
  }
  pdl_wait();
  pdl_trigger();
  int ticket = 0;
  if constexpr (NORM) {
    gemv_norm_prologue<M>(a.f, K8 * 8, mma_smem, nred);
    // This block has read the old residual: its ticket now, looked at only at the end.
    if (tid == 0) ticket = atomicAdd(a.f.counter, 1);
    x4 = reinterpret_cast<const uint4*>(mma_smem);
    xs8 = K8;
  }
  {
    int tl = 0, c = c0;
#pragma unroll
    for (int d = 0; d < D; ++d) {
      load_x(xb[d], tl, c);
      advance(tl, c);
    }
  }

  float acc[R][4];
#pragma unroll
  for (int h = 0; h < R; ++h)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[h][i] = 0.f;
  int ct = 0, cc = c0;
  auto consume = [&](const uint4(&w)[R], const uint4& xv) {
    const uint32_t lo[4] = {xv.x, 0u, xv.y, 0u}, hi[4] = {xv.z, 0u, xv.w, 0u};
#pragma unroll
    for (int h = 0; h < R; ++h) {
      mma_bf16(acc[h], lo, w[h].x, w[h].y);
      mma_bf16(acc[h], hi, w[h].z, w[h].w);
    }
  };
  for (int s = 0; s < steps; s += D) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
      if (s + d < steps) {
        consume(wb[d], xb[d]);
        load_w(wb[d], lt, lc);
        load_x(xb[d], lt, lc);
        advance(lt, lc);
        if (cc + 1 == c1) {  // this slice of tile ct is summed: to shared memory
          if (g < M) {
#pragma unroll
            for (int h = 0; h < R; ++h) {
              float* r = red + ((static_cast<size_t>(ct) * kSlices + warp) * R + h) * M * 8 + g * 8;
              *reinterpret_cast<float2*>(r + 2 * t) = make_float2(acc[h][0], acc[h][1]);
              acc[h][0] = acc[h][1] = acc[h][2] = acc[h][3] = 0.f;
            }
          }
        }
        advance(ct, cc);
      }
    }
  }
  __syncthreads();
  for (int e = tid; e < ntiles * M * 8; e += 256) {
    const int tl = e / (M * 8), m = (e / 8) % M, r = e % 8;
    const int row = (tb0 + tl) * 8 + r;
    if (row >= N) continue;
    float v[R];
#pragma unroll
    for (int h = 0; h < R; ++h) {
      float sum = 0.f;
      for (int j = 0; j < kSlices; ++j)
        sum += red[((static_cast<size_t>(tl) * kSlices + j) * R + h) * M * 8 + m * 8 + r];
      v[h] = sum;
    }
    gemv_store<TO, GATED>(a, m, row, v[0], v[R - 1]);
  }
  if constexpr (NORM) gemv_norm_writeback<M>(a.f, K8 * 8, mma_smem, ticket, &is_last);
}

// Loads in flight per warp: 8 for one W row per step, 6 for two (gated), within the 128
// registers of 2 blocks per SM.
template <int M, class TO, bool NORM, bool GATED>
void launch_t(const GemvArgs& a, unsigned grid, size_t smem, cudaStream_t st) {
  constexpr int D = GATED ? 6 : 8;
  auto kernel = gemv_mma_kernel<M, TO, NORM, GATED, D>;
  static const bool configured = [&] {
    TS_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(kMaxSmem)));
    return true;
  }();
  (void)configured;
  launch(kernel, grid, 256, smem, st, "linear (gemv mma)", a);
}

}  // namespace

bool gemv_mma_fits(int M, int64_t N, int64_t K, bool norm, int sms) {
  if (M < 1 || M > 8 || K % 32 != 0 || K / 32 < kMinChunks || N < 1 || N > (int64_t{1} << 30))
    return false;
  // Sized for the gated case (two sums per output), the larger.
  const size_t smem = (norm ? gemv_norm_bytes(M, K) : 0) +
                      red_bytes(M, max_tiles_per_block(N, std::max(sms, 1)), true);
  return smem <= kMaxSmem;
}

void launch_gemv_mma(int M, const GemvArgs& a, bool norm, bool gated, DType out_dt, cudaStream_t st,
                     int sms) {
  const unsigned grid = static_cast<unsigned>(grid_of(a.N, sms));
  const size_t smem = (norm ? gemv_norm_bytes(M, static_cast<int64_t>(a.K8) * 8) : 0) +
                      red_bytes(M, max_tiles_per_block(a.N, sms), gated);
  auto go = [&]<int M_, class TO, bool NORM, bool GATED>() {
    launch_t<M_, TO, NORM, GATED>(a, grid, smem, st);
  };
  if (out_dt == DType::f32) {
    dispatch_gemv<float>(M, norm, gated, go);
  } else {
    dispatch_gemv<bf16>(M, norm, gated, go);
  }
}

}  // namespace tessera::cuda
