// Split-KV decode attention (flash-decoding) for sequences with one new token. Grid
// (split, kv head, sequence); a block takes 64 keys of one split for all q heads that share the
// kv head (GQA: K/V rows are read once for the rep heads). The split's slots are looked up once,
// its K and V rows arrive in shared memory in one round of cp.async, and the scores and the
// weighted sum are computed from there by 4 warps of 16 keys each, so that the block costs about
// two memory latencies rather than one per key. With one split the block writes the result;
// otherwise it writes a partial (max, sum, unnormalised output) and the last block to finish --
// found with an atomic counter per (sequence, kv head) -- merges them, so no second launch.
// Splits are counted from the first key the token sees: a sliding layer launches at most
// window / 64 + 1 of them.
// ref: cpu/attention.cpp; FlashDecoding (Dao et al. 2023) for the split and merge.
#include <algorithm>

#include "backend/cuda/attention.h"
#include "backend/cuda/cuda_common.h"

namespace tessera::cuda {

namespace {

constexpr int kC = kDecodeKeysPerSplit;  // 64
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kKeysPerWarp = kC / kWarps;  // 16
constexpr int kMaxRep = kDecodeMaxRep;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

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
__global__ void __launch_bounds__(kThreads)
    attn_decode_kernel(AttnParams p, int nsplit, float* __restrict__ part,
                       int* __restrict__ counters) {
  constexpr int CH = HD / 8;     // 16-byte chunks per K/V row
  constexpr int LPK = CH;        // lanes per key: one chunk each
  constexpr int KPI = 32 / LPK;  // keys a warp covers per iteration (1, 2 or 4)
  constexpr int ITERS = kKeysPerWarp / KPI;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* Ks = reinterpret_cast<bf16*>(smem_raw);  // [kC][HD]; reused for the warp reduction
  bf16* Vs = Ks + kC * HD;                       // [kC][HD]
  __shared__ float sc[kMaxRep][kC];
  __shared__ int slots[kC];
  __shared__ float ms[kMaxRep], ls[kMaxRep];
  __shared__ int is_last;

  const int s = blockIdx.z, kvh = blockIdx.y, x = blockIdx.x, tid = threadIdx.x;
  // Three independent loads, then the branch; with one new token its position is kv_len - 1
  // (BatchView: seq_kv_len is the last position + 1), which saves a dependent load.
  const int q_len = p.seq_q_len[s], t = p.seq_q_start[s], kv_len = p.seq_kv_len[s];
  if (q_len != 1) return;
  const int rep = p.nh / p.nkv;
  const int pos = kv_len - 1;
  const int hi = pos;
  const int lo = p.window > 0 ? max(0, pos - p.window + 1) : 0;
  bf16* out = static_cast<bf16*>(p.out) + static_cast<int64_t>(t) * p.out_stride +
              static_cast<int64_t>(kvh) * rep * HD;
  if (hi < lo) {  // no keys (a padding row): zeros
    pdl_wait();
    pdl_trigger();
    if (x == 0)
      for (int i = tid; i < rep * HD; i += kThreads) out[i] = __float2bfloat16_rn(0.f);
    return;
  }
  const int first = lo / kC;
  const int n_act = hi / kC - first + 1;
  if (x >= n_act) return;
  const int base = (first + x) * kC;
  const int k0 = max(lo, base), k1 = min(hi + 1, base + kC);  // keys [k0, k1)

  if (tid < kC) {
    const int key = base + tid;
    int slot = -1;
    if (key >= k0 && key < k1) {
      const int blk = p.block_table[static_cast<int64_t>(s) * p.max_blocks + key / p.block_size];
      if (blk >= 0) slot = blk * p.block_size + key % p.block_size;
    }
    slots[tid] = slot;
  }
  // Batch arrays and block tables were uploaded before this forward began; the query and the K/V
  // (this step's row was stored by the kernel just before) need the previous kernel done.
  pdl_wait();
  pdl_trigger();
  const int warp = tid >> 5, lane = tid & 31;
  const int key_sub = lane / LPK, chunk = lane % LPK;
  // This lane's 8 q values of each head of the group (independent of the slot lookups).
  float q[kMaxRep][8];
  {
    const bf16* qrow = static_cast<const bf16*>(p.qkv) + static_cast<int64_t>(t) * p.qkv_stride +
                       static_cast<int64_t>(kvh) * rep * HD + chunk * 8;
#pragma unroll
    for (int r = 0; r < kMaxRep; ++r) {
      if (r < rep) {
        bf16x8_to_f32(*reinterpret_cast<const uint4*>(qrow + r * HD), q[r]);
      } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) q[r][i] = 0.f;
      }
    }
  }
  __syncthreads();
  // K and V rows of the split into shared memory; keys outside [k0, k1) become zeros.
  const bf16* K = static_cast<const bf16*>(p.k);
  const bf16* V = static_cast<const bf16*>(p.v);
  for (int c = tid; c < kC * CH; c += kThreads) {
    const int j = c / CH, part = c % CH;
    const int slot = slots[j];
    bf16* kd = Ks + j * HD + part * 8;
    bf16* vd = Vs + j * HD + part * 8;
    if (slot >= 0) {
      const int64_t off = (static_cast<int64_t>(slot) * p.nkv + kvh) * HD + part * 8;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(kd)), "l"(K + off));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(vd)), "l"(V + off));
    } else {
      *reinterpret_cast<uint4*>(kd) = make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(vd) = make_uint4(0, 0, 0, 0);
    }
  }
  asm volatile("cp.async.commit_group;\ncp.async.wait_all;\n" ::: "memory");
  __syncthreads();

  // Scores: warp w scores keys [16 w, 16 w + 16); the LPK lanes of a key split its dims.
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int j = warp * kKeysPerWarp + it * KPI + key_sub;
    float kf[8];
    bf16x8_to_f32(*reinterpret_cast<const uint4*>(Ks + j * HD + chunk * 8), kf);
#pragma unroll
    for (int r = 0; r < kMaxRep; ++r) {
      if (r >= rep) break;
      float d = 0.f;
#pragma unroll
      for (int i = 0; i < 8; ++i) d = fmaf(q[r][i], kf[i], d);
#pragma unroll
      for (int o = LPK / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
      if (chunk == 0) {
        float v = d * p.scale;
        if (p.softcap > 0.f) v = tanhf(v / p.softcap) * p.softcap;
        sc[r][j] = slots[j] >= 0 ? v : -INFINITY;
      }
    }
  }
  __syncthreads();

  // Softmax pieces per head (one warp per head): max, exp, sum over the split's keys.
  for (int r = warp; r < rep; r += kWarps) {
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

  // Weighted sum of V: warp w over its 16 keys, lane over its 8 dims of its key subgroup.
  float acc[kMaxRep][8];
#pragma unroll
  for (int r = 0; r < kMaxRep; ++r)
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[r][i] = 0.f;
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int j = warp * kKeysPerWarp + it * KPI + key_sub;
    float vf[8];
    bf16x8_to_f32(*reinterpret_cast<const uint4*>(Vs + j * HD + chunk * 8), vf);
#pragma unroll
    for (int r = 0; r < kMaxRep; ++r) {
      if (r >= rep) break;
      const float pj = sc[r][j];
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[r][i] = fmaf(pj, vf[i], acc[r][i]);
    }
  }
  // Fold the key subgroups of the warp (lanes chunk, chunk + LPK, ...), then the 4 warps.
#pragma unroll
  for (int r = 0; r < kMaxRep; ++r)
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int o = 16; o >= LPK; o >>= 1) acc[r][i] += __shfl_xor_sync(0xffffffffu, acc[r][i], o);
  float* red = reinterpret_cast<float*>(Ks);  // [kWarps][kMaxRep][HD], K is no longer read
  if (key_sub == 0) {
#pragma unroll
    for (int r = 0; r < kMaxRep; ++r) {
      if (r >= rep) break;
#pragma unroll
      for (int i = 0; i < 8; ++i) red[(warp * kMaxRep + r) * HD + chunk * 8 + i] = acc[r][i];
    }
  }
  __syncthreads();

  if (n_act == 1) {
    for (int e = tid; e < rep * HD; e += kThreads) {
      const int r = e / HD, d = e % HD;
      float o = 0.f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) o += red[(w * kMaxRep + r) * HD + d];
      out[e] = __float2bfloat16_rn(ls[r] > 0.f ? o / ls[r] : 0.f);
    }
    return;
  }

  // Several splits: write this one's partial, then the last block to arrive merges them all.
  const int64_t group = static_cast<int64_t>(s) * p.nkv + kvh;
  float* po = part + group * nsplit * kMaxRep * (HD + 2);  // [nsplit][kMaxRep][HD + 2]
  for (int e = tid; e < rep * HD; e += kThreads) {
    const int r = e / HD, d = e % HD;
    float o = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) o += red[(w * kMaxRep + r) * HD + d];
    po[(static_cast<int64_t>(x) * kMaxRep + r) * (HD + 2) + d] = o;
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
  // Merge: per head, the splits' weights exp(m_i - M) into shared memory (the K tile is free),
  // then each thread sums its output elements over the splits with independent loads.
  float* wsm = reinterpret_cast<float*>(Ks);  // [kMaxRep][n_act]
  __shared__ float Ls[kMaxRep];
  for (int r = warp; r < rep; r += kWarps) {
    float mx = -INFINITY;
    for (int i = lane; i < n_act; i += 32)
      mx = fmaxf(mx, __ldcg(po + (static_cast<int64_t>(i) * kMaxRep + r) * (HD + 2) + HD));
    mx = warp_max(mx);
    float L = 0.f;
    for (int i = lane; i < n_act; i += 32) {
      const float* row = po + (static_cast<int64_t>(i) * kMaxRep + r) * (HD + 2);
      const float w = expf(__ldcg(row + HD) - mx);
      wsm[r * n_act + i] = w;
      L += w * __ldcg(row + HD + 1);
    }
    L = warp_sum(L);
    if (lane == 0) Ls[r] = L;
  }
  __syncthreads();
  constexpr int kPer = kMaxRep * HD / kThreads;  // elements per thread at most
  float macc[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) macc[k] = 0.f;
#pragma unroll 2
  for (int i = 0; i < n_act; ++i) {
    const float* prow = po + static_cast<int64_t>(i) * kMaxRep * (HD + 2);
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int e = tid + k * kThreads;
      if (e < rep * HD) {
        const int r = e / HD, d = e % HD;
        macc[k] += wsm[r * n_act + i] * __ldcg(prow + r * (HD + 2) + d);
      }
    }
  }
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int e = tid + k * kThreads;
    if (e < rep * HD) {
      const float L = Ls[e / HD];
      out[e] = __float2bfloat16_rn(L > 0.f ? macc[k] / L : 0.f);
    }
  }
  if (tid == 0) counters[group] = 0;
}

template <int HD>
void launch_decode(const AttnParams& p, int nsplit, float* partials, int* counters,
                   cudaStream_t st) {
  constexpr size_t smem = static_cast<size_t>(2) * kC * HD * sizeof(bf16);
  static_assert(smem >= sizeof(float) * kWarps * kMaxRep * HD, "reduction fits in the K tile");
  static bool configured = false;
  if (!configured) {
    TS_CUDA(cudaFuncSetAttribute(attn_decode_kernel<HD>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(smem)));
    configured = true;
  }
  launch(attn_decode_kernel<HD>, dim3(nsplit, p.nkv, p.num_seqs), kThreads, smem, st,
         "attention (decode)", p, nsplit, partials, counters);
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
  switch (p.hd) {
    case 64:
      launch_decode<64>(p, nsplit, partials, counters, st);
      break;
    case 128:
      launch_decode<128>(p, nsplit, partials, counters, st);
      break;
    case 256:
      launch_decode<256>(p, nsplit, partials, counters, st);
      break;
    default:
      throw Error(ErrorKind::internal, "attention_decode: unsupported head_dim");
  }
}

}  // namespace tessera::cuda
