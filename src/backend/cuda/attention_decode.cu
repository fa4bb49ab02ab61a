// Split-KV decode attention (flash-decoding) for sequences with one new token. Grid
// (split, kv head, sequence); each block scores up to 128 keys of its split for all q heads that
// share the kv head (GQA: the K/V rows are read once for rep heads), then either writes the
// result (one split) or a partial (max, sum, unnormalised output) that the last block to finish
// -- found with an atomic counter per (sequence, kv head) -- merges. Splits are counted from the
// first key the token sees, so a sliding-window layer launches only window / 128 + 1 of them.
// ref: cpu/attention.cpp; FlashDecoding (Dao et al. 2023) for the split/merge.
#include <algorithm>

#include "backend/cuda/attention.h"
#include "backend/cuda/cuda_common.h"

namespace tessera::cuda {

namespace {

constexpr int kC = kDecodeKeysPerSplit;
constexpr int kThreads = 128;
constexpr int kMaxRep = kDecodeMaxRep;

__device__ __forceinline__ void bf16x8_to_f32(uint4 u, float* f) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 v = __bfloat1622float2(h[i]);
    f[2 * i] = v.x;
    f[2 * i + 1] = v.y;
  }
}

template <int HD>
__global__ void __launch_bounds__(kThreads) attn_decode_kernel(AttnParams p, int nsplit,
                                                               float* __restrict__ part,
                                                               int* __restrict__ counters) {
  __shared__ __align__(16) float qs[kMaxRep][HD];
  __shared__ float sc[kMaxRep][kC];
  __shared__ int slots[kC];
  __shared__ float ms[kMaxRep], ls[kMaxRep];
  __shared__ int is_last;
  const int s = blockIdx.z, kvh = blockIdx.y, x = blockIdx.x, tid = threadIdx.x;
  if (p.seq_q_len[s] != 1) return;
  const int rep = p.nh / p.nkv;
  const int t = p.seq_q_start[s];
  const int pos = p.positions[t];
  const int hi = min(pos, p.seq_kv_len[s] - 1);
  const int lo = p.window > 0 ? max(0, pos - p.window + 1) : 0;
  bf16* out = static_cast<bf16*>(p.out) + static_cast<int64_t>(t) * p.out_stride +
              static_cast<int64_t>(kvh) * rep * HD;
  if (hi < lo) {  // no keys (a padding row): zeros
    if (x == 0)
      for (int i = tid; i < rep * HD; i += kThreads) out[i] = __float2bfloat16_rn(0.f);
    return;
  }
  const int first = lo / kC;
  const int n_act = hi / kC - first + 1;
  if (x >= n_act) return;
  const int base = (first + x) * kC;
  const int k0 = max(lo, base), k1 = min(hi + 1, base + kC);  // keys [k0, k1)

  const bf16* q = static_cast<const bf16*>(p.qkv) + static_cast<int64_t>(t) * p.qkv_stride +
                  static_cast<int64_t>(kvh) * rep * HD;
  for (int i = tid; i < rep * HD; i += kThreads) qs[i / HD][i % HD] = __bfloat162float(q[i]);
  __syncthreads();

  // Phase 1: thread j scores key base + j against every q head of the group.
  const bf16* K = static_cast<const bf16*>(p.k);
  const bf16* V = static_cast<const bf16*>(p.v);
  const int32_t* table = p.block_table + static_cast<int64_t>(s) * p.max_blocks;
  {
    const int key = base + tid;
    int slot = -1;
    if (key >= k0 && key < k1) {
      const int blk = table[key / p.block_size];
      if (blk >= 0) slot = blk * p.block_size + key % p.block_size;
    }
    slots[tid] = slot;
    float dot[kMaxRep];
#pragma unroll
    for (int r = 0; r < kMaxRep; ++r) dot[r] = 0.f;
    if (slot >= 0) {
      const uint4* kr = reinterpret_cast<const uint4*>(
          K + (static_cast<int64_t>(slot) * p.nkv + kvh) * HD);
#pragma unroll 4
      for (int c = 0; c < HD / 8; ++c) {
        float kf[8];
        bf16x8_to_f32(__ldg(kr + c), kf);
#pragma unroll
        for (int r = 0; r < kMaxRep; ++r) {
          if (r < rep) {
            const float4 qa = *reinterpret_cast<const float4*>(&qs[r][c * 8]);
            const float4 qb = *reinterpret_cast<const float4*>(&qs[r][c * 8 + 4]);
            dot[r] += qa.x * kf[0] + qa.y * kf[1] + qa.z * kf[2] + qa.w * kf[3] + qb.x * kf[4] +
                      qb.y * kf[5] + qb.z * kf[6] + qb.w * kf[7];
          }
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kMaxRep; ++r) {
      if (r < rep) {
        float v = dot[r] * p.scale;
        if (p.softcap > 0.f) v = tanhf(v / p.softcap) * p.softcap;
        sc[r][tid] = slot >= 0 ? v : -INFINITY;
      }
    }
  }
  __syncthreads();

  // Phase 2: per head, max and exp-sum over the split's keys (one warp per head).
  const int warp = tid >> 5, lane = tid & 31;
  for (int r = warp; r < rep; r += kThreads / 32) {
    float mx = -INFINITY;
    for (int j = lane; j < kC; j += 32) mx = fmaxf(mx, sc[r][j]);
    mx = warp_max(mx);
    float sum = 0.f;
    for (int j = lane; j < kC; j += 32) {
      const float e = sc[r][j] == -INFINITY ? 0.f : expf(sc[r][j] - mx);
      sc[r][j] = e;
      sum += e;
    }
    sum = warp_sum(sum);
    if (lane == 0) {
      ms[r] = mx;
      ls[r] = sum;
    }
  }
  __syncthreads();

  // Phase 3: thread owns dims (2 tid, 2 tid + 1); weighted sum of V over the split's keys.
  const int d = 2 * tid;
  float acc[kMaxRep][2];
#pragma unroll
  for (int r = 0; r < kMaxRep; ++r) acc[r][0] = acc[r][1] = 0.f;
  if (d < HD) {
    const int j0 = k0 - base, j1 = k1 - base;
#pragma unroll 4
    for (int j = j0; j < j1; ++j) {
      const int slot = slots[j];
      if (slot < 0) continue;
      const float2 v = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(
          V + (static_cast<int64_t>(slot) * p.nkv + kvh) * HD + d));
#pragma unroll
      for (int r = 0; r < kMaxRep; ++r) {
        if (r < rep) {
          acc[r][0] += sc[r][j] * v.x;
          acc[r][1] += sc[r][j] * v.y;
        }
      }
    }
  }

  if (n_act == 1) {
    if (d < HD) {
#pragma unroll
      for (int r = 0; r < kMaxRep; ++r) {
        if (r < rep) {
          const float inv = ls[r] > 0.f ? 1.f / ls[r] : 0.f;
          *reinterpret_cast<__nv_bfloat162*>(out + r * HD + d) =
              __floats2bfloat162_rn(acc[r][0] * inv, acc[r][1] * inv);
        }
      }
    }
    return;
  }

  // Several splits: write this one's partial, then the last block to arrive merges them all.
  const int64_t group = static_cast<int64_t>(s) * p.nkv + kvh;
  float* po = part + group * nsplit * kMaxRep * (HD + 2);  // [nsplit][kMaxRep][HD + 2]
  if (d < HD) {
#pragma unroll
    for (int r = 0; r < kMaxRep; ++r) {
      if (r < rep) {
        float* row = po + (static_cast<int64_t>(x) * kMaxRep + r) * (HD + 2);
        row[d] = acc[r][0];
        row[d + 1] = acc[r][1];
      }
    }
  }
  if (tid < rep) {
    float* row = po + (static_cast<int64_t>(x) * kMaxRep + tid) * (HD + 2);
    row[HD] = ms[tid];
    row[HD + 1] = ls[tid];
  }
  __threadfence();
  __syncthreads();
  if (tid == 0) is_last = atomicAdd(&counters[group], 1) == n_act - 1;
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  if (d < HD) {
    for (int r = 0; r < rep; ++r) {
      float M = -INFINITY;
      for (int i = 0; i < n_act; ++i)
        M = fmaxf(M, __ldcg(po + (static_cast<int64_t>(i) * kMaxRep + r) * (HD + 2) + HD));
      float L = 0.f, o0 = 0.f, o1 = 0.f;
      for (int i = 0; i < n_act; ++i) {
        const float* row = po + (static_cast<int64_t>(i) * kMaxRep + r) * (HD + 2);
        const float w = expf(__ldcg(row + HD) - M);
        L += w * __ldcg(row + HD + 1);
        o0 += w * __ldcg(row + d);
        o1 += w * __ldcg(row + d + 1);
      }
      const float inv = L > 0.f ? 1.f / L : 0.f;
      *reinterpret_cast<__nv_bfloat162*>(out + r * HD + d) =
          __floats2bfloat162_rn(o0 * inv, o1 * inv);
    }
  }
  if (tid == 0) counters[group] = 0;
}

}  // namespace

int attention_decode_splits(const AttnParams& p, int kv_cap) {
  int n = (kv_cap + kC - 1) / kC;
  if (p.window > 0) n = std::min(n, (p.window + kC - 1) / kC + 1);
  return std::max(n, 1);
}

size_t attention_decode_partial_floats(const AttnParams& p, int nsplit) {
  return static_cast<size_t>(p.num_seqs) * p.nkv * nsplit * kMaxRep * (p.hd + 2);
}

void attention_decode(const AttnParams& p, int nsplit, float* partials, int* counters,
                      cudaStream_t st) {
  if (p.num_seqs == 0) return;
  const dim3 grid(nsplit, p.nkv, p.num_seqs);
  switch (p.hd) {
    case 64: attn_decode_kernel<64><<<grid, kThreads, 0, st>>>(p, nsplit, partials, counters); break;
    case 128: attn_decode_kernel<128><<<grid, kThreads, 0, st>>>(p, nsplit, partials, counters); break;
    case 256: attn_decode_kernel<256><<<grid, kThreads, 0, st>>>(p, nsplit, partials, counters); break;
    default: throw Error(ErrorKind::internal, "attention_decode: unsupported head_dim");
  }
  TS_CUDA_LAUNCH("attention (decode)");
}

}  // namespace tessera::cuda
