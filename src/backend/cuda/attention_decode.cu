// Split-KV decode attention (flash-decoding) for sequences with one new token, on the tensor
// cores. Grid (split, kv head, sequence); a block takes kC = 64 keys of one split for the rep
// (<= 8) q heads that share the kv head, as a 16-row tile (rows >= rep are zeros), so that GQA
// reads each K/V row once.
//
// A decode step pays latency here, not bandwidth (a few hundred keys per sequence), and an
// earlier CUDA-core version spent ~2,000 instructions per warp on the dot products, shuffles and
// exponentials of its 64 keys (microseconds per block). With
// mma.m16n8k16 a warp does its share in ~40 instructions: the block's chain is slots (block
// table) and the K/V rows of earlier tokens into shared memory by cp.async, both before the PDL
// wait, then q and this step's K/V row (rows padded by 16 bytes, so ldmatrix is free of bank
// conflicts) -> S = q K^T (each warp 8 keys)
// -> softmax per head (one warp per head, scores in log2 units, P rounded to bf16 as
// transformers' eager attention rounds its probabilities) -> O = P V (each warp HD / 8 dims).
// With a DecodeRope (the backend defers qk_norm_rope + kv_store of a decode step to here) the
// block also norms and rotates its q heads and, in the split holding the new key, this step's k
// (and stores k and v in the cache): one launch fewer per layer, the same bits (rope.cuh).
// With one split the block writes O / l; otherwise it writes a partial (max, sum, unnormalised
// O) and the splits merge in the same launch: through a cluster (small grids, below) or by the
// last block to finish -- an atomic counter per (sequence, kv head). Splits are counted from the
// first key the token sees: a sliding layer launches at most window / 64 + 1.
//
// ref: cpu/attention.cpp; FlashDecoding (Dao et al. 2023) for the split and merge; the PTX ISA's
// mma.m16n8k16 fragment layouts.
#include <algorithm>
#include <cstdlib>

#include <cooperative_groups.h>

#include "backend/cuda/attention.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/mma.cuh"
#include "backend/cuda/rope.cuh"

namespace tessera::cuda {

namespace cg = cooperative_groups;

namespace {

constexpr int kC = kDecodeKeysPerSplit;  // 64
constexpr int kMaxCluster = 16;          // splits merged through a cluster (non-portable size)
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxRep = kDecodeMaxRep;  // 8
constexpr float kLog2e = 1.4426950408889634f;

// `p` in the shared memory of cluster block `rank` (distributed shared memory).
template <class T>
__device__ __forceinline__ T* cluster_peer(T* p, int rank) {
  return cg::this_cluster().map_shared_rank(p, rank);
}

// 2^(a - b) for a rescale where a may be -inf (nothing seen): 0 then.
__device__ __forceinline__ float rescale(float a, float b) {
  return a == -INFINITY ? 0.f : exp2f(a - b);
}

template <int HD>
struct DecodeSmem {
  static constexpr int kRow = HD + 8;   // bf16 per padded K / V / q row
  static constexpr int kPRow = kC + 8;  // bf16 per padded P row
  static constexpr int kSRow = kC + 4;  // floats per score row
  static constexpr size_t kK = 0;
  static constexpr size_t kV = kK + static_cast<size_t>(kC) * kRow * 2;
  static constexpr size_t kQ = kV + static_cast<size_t>(kC) * kRow * 2;
  static constexpr size_t kS = kQ + static_cast<size_t>(16) * kRow * 2;
  static constexpr size_t kP = kS + static_cast<size_t>(16) * kSRow * 4;
  static constexpr size_t kBytes = kP + static_cast<size_t>(16) * kPRow * 2;
  // The cluster variant's merge area, written by the peers: (max, sum) per split and q head, then
  // each split's partial of this block's slice of the outputs (pairs; ceil(pairs / n) per split).
  static constexpr size_t kML = kBytes;
  static constexpr size_t kMO = kML + static_cast<size_t>(kMaxCluster) * kMaxRep * 8;
  static constexpr size_t kBytesCluster =
      kMO + (static_cast<size_t>(kMaxRep) * HD + 2 * kMaxCluster) * 4;
};

// CLUSTER: the grid's splits of one (sequence, kv head) form a thread-block cluster and merge
// through distributed shared memory (each block pushes its partial to the blocks that merge its
// slices, then one cluster barrier) instead of global partials, a fence and an atomic, which
// measured faster for the decode of a few sequences.
//
// At most 48 registers (5 blocks' worth) for head dims 64 and 128: at M = 1 the decode step's qkv
// GEMV before this kernel may hold 2 x 256 threads x 104 registers per SM (8 load slots), and a
// block of this kernel then fits in the 12,288 registers left, so under PDL it becomes resident
// while the GEMV runs and its slot lookups and K/V copies overlap it instead of starting when a
// GEMV block exits. Head dim 256 (Gemma 3) gets up to 64 (4 blocks' worth; it uses 60-63): Gemma
// 3's qkv GEMVs take 5 load slots (93 registers), which leaves 16,384, and with 48 its head-256
// variants spent cycles on register pressure.
// One kernel of ~350 lines: the rope and KV store of the new token (DecodeRope), the key slice's
// scores and softmax, the V sums and the split merge (cluster or last block) run in one launch
// on one block's shared memory, each phase reading what the previous left there; as separate
// kernels each would add a launch and a round trip through global memory to a step that pays
// latency, not bandwidth.
template <int HD, bool CLUSTER>
__global__ void __launch_bounds__(kThreads, HD == 256 ? 4 : 5)
    attn_decode_kernel(AttnParams p, int nsplit, float* __restrict__ part,
                       int* __restrict__ counters, DecodeRope ro) {
  using L = DecodeSmem<HD>;
  constexpr int CH = HD / 8;  // 16-byte chunks per row
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* Ks = reinterpret_cast<bf16*>(smem_raw + L::kK);    // [kC][kRow]
  bf16* Vs = reinterpret_cast<bf16*>(smem_raw + L::kV);    // [kC][kRow]
  bf16* Qs = reinterpret_cast<bf16*>(smem_raw + L::kQ);    // [16][kRow]
  float* Ss = reinterpret_cast<float*>(smem_raw + L::kS);  // [16][kSRow]
  bf16* Ps = reinterpret_cast<bf16*>(smem_raw + L::kP);    // [16][kPRow]
  __shared__ int slots[kC];
  __shared__ float fm[kMaxRep], fl[kMaxRep];
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
  // With ro.on this kernel also does the rope of q and of this step's k and the KV store
  // (rope.cu's qk_norm_rope_store, bit for bit): warps < rep rotate the q heads into shared
  // memory, warp kw the new k (into the cache and the block's K row), warp vw copies v.
  const int kw = rep % kWarps, vw = (rep + 1) % kWarps, warp = tid >> 5;
  const bf16* qkv_t = static_cast<const bf16*>(p.qkv) + static_cast<int64_t>(t) * p.qkv_stride;
  RopeLane rl;
  float rpos = 0.f;
  int64_t new_slot = -1;
  if (ro.on) {  // weights, the position and the slot: nothing in this forward writes them
    if (warp < rep) rl.load_weights(ro.q_norm, ro.inv_freq, HD / 2);
    if (warp == kw && kw >= rep) rl.load_weights(ro.k_norm, ro.inv_freq, HD / 2);
    rpos = static_cast<float>(ro.positions[t]);
    new_slot = ro.slots[t];
  }
  // This step's k (normed, rotated) and v of kv head kvh into the cache at new_slot and into the
  // shared-memory rows krow / vrow when given. Warp kw's rl holds the k weights.
  auto new_kv = [&](bf16* krow, bf16* vrow) {
    const int lane = tid & 31;
    if (warp == kw) {
      float a[kMaxPairsPerLane], b[kMaxPairsPerLane];
      rope_load(qkv_t + static_cast<int64_t>(p.nh + kvh) * HD, HD, a, b);
      rl.apply(a, b, ro.k_norm != nullptr, ro.eps, HD, rpos);
      bf16* kc = static_cast<bf16*>(const_cast<void*>(p.k)) + (new_slot * p.nkv + kvh) * HD;
#pragma unroll
      for (int k = 0; k < kMaxPairsPerLane; ++k) {
        const int j = lane + 32 * k;
        if (j < HD / 2) {
          const bf16 lo = from_f32<bf16>(a[k]), hi = from_f32<bf16>(b[k]);
          if (krow) krow[j] = lo, krow[j + HD / 2] = hi;
          if (new_slot >= 0) kc[j] = lo, kc[j + HD / 2] = hi;
        }
      }
    }
    if (warp == vw) {
      const uint4* src =
          reinterpret_cast<const uint4*>(qkv_t + static_cast<int64_t>(p.nh + p.nkv + kvh) * HD);
      uint4* vc = reinterpret_cast<uint4*>(static_cast<bf16*>(const_cast<void*>(p.v)) +
                                           (new_slot * p.nkv + kvh) * HD);
      for (int c = lane; c < CH; c += 32) {
        const uint4 val = src[c];
        if (vrow) reinterpret_cast<uint4*>(vrow)[c] = val;
        if (new_slot >= 0) vc[c] = val;
      }
    }
  };
  if (hi < lo) {  // no keys (a padding row): zeros
    pdl_wait();
    pdl_trigger();
    if (x == 0) {
      for (int i = tid; i < rep * HD; i += kThreads) out[i] = __float2bfloat16_rn(0.f);
      if (ro.on) {
        if (kw < rep) rl.load_weights(ro.k_norm, ro.inv_freq, HD / 2);
        new_kv(nullptr, nullptr);
      }
    }
    return;
  }
  const int first = lo / kC;
  const int n_act = hi / kC - first + 1;
  // Cluster: a block may write a peer's shared memory only once the peer has started, so every
  // block arrives here (the returns above are the same for the whole cluster) and waits before
  // its first remote store or its exit.
  if (CLUSTER) asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
  auto cluster_started = [] {
    if (CLUSTER) asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
  };
  if (CLUSTER && n_act > 1 && x >= n_act) {  // no keys here, but the cluster barriers need all
    pdl_trigger();  // the next kernel launches only once every block has triggered or exited
    cluster_started();
    cg::this_cluster().sync();
    return;
  }
  if (x >= n_act) {
    cluster_started();
    return;
  }
  const int base = (first + x) * kC;
  const int k0 = max(lo, base), k1 = min(hi + 1, base + kC);  // keys [k0, k1)

  // Block tables were uploaded before this forward began: look the slots up before the wait.
  if (tid < kC) {
    const int key = base + tid;
    int slot = -1;
    if (key >= k0 && key < k1) {
      const int blk = p.block_table[static_cast<int64_t>(s) * p.max_blocks + key / p.block_size];
      if (blk >= 0) slot = blk * p.block_size + key % p.block_size;
    }
    slots[tid] = slot;
  }
  __syncthreads();
  {
    const bf16* K = static_cast<const bf16*>(p.k);
    const bf16* V = static_cast<const bf16*>(p.v);
    auto load_row = [&](int j, int ch) {
      const int slot = slots[j];
      bf16* kd = Ks + j * L::kRow + ch * 8;
      bf16* vd = Vs + j * L::kRow + ch * 8;
      if (slot >= 0) {
        const int64_t off = (static_cast<int64_t>(slot) * p.nkv + kvh) * HD + ch * 8;
        cp_async16(kd, K + off);
        cp_async16(vd, V + off);
      } else {  // zeros: a masked key's V must not be NaN (0 * NaN)
        *reinterpret_cast<uint4*>(kd) = make_uint4(0, 0, 0, 0);
        *reinterpret_cast<uint4*>(vd) = make_uint4(0, 0, 0, 0);
      }
    };
    // Keys before this step's token were stored by earlier forwards: their rows (up to 64 KB
    // per block, a few us of one SM's bandwidth) load before the wait, overlapping the kernels
    // before. The query and this step's K/V row come from the kernel just before.
    const int newest = hi - base;  // its row in this split, if any
    for (int c = tid; c < kC * CH; c += kThreads)
      if (c / CH != newest) load_row(c / CH, c % CH);
    pdl_wait();
    pdl_trigger();
    const bf16* qrow = qkv_t + static_cast<int64_t>(kvh) * rep * HD;
    if (ro.on) {
      if (warp < rep) {  // q head warp, normed and rotated into its shared-memory row
        float a[kMaxPairsPerLane], b[kMaxPairsPerLane];
        rope_load(qrow + warp * HD, HD, a, b);
        rl.apply(a, b, ro.q_norm != nullptr, ro.eps, HD, rpos);
        const int lane = tid & 31;
#pragma unroll
        for (int k = 0; k < kMaxPairsPerLane; ++k) {
          const int j = lane + 32 * k;
          if (j < HD / 2) {
            Qs[warp * L::kRow + j] = from_f32<bf16>(a[k]);
            Qs[warp * L::kRow + j + HD / 2] = from_f32<bf16>(b[k]);
          }
        }
      }
      if (newest < kC) {
        if (warp == kw && kw < rep) rl.load_weights(ro.k_norm, ro.inv_freq, HD / 2);
        new_kv(Ks + newest * L::kRow, Vs + newest * L::kRow);
      }
    } else if (newest < kC) {
      for (int c = tid; c < CH; c += kThreads) load_row(newest, c);
    }
    for (int c = tid; c < 16 * CH; c += kThreads) {
      const int row = c / CH, ch = c % CH;
      bf16* qd = Qs + row * L::kRow + ch * 8;
      if (row >= rep) {
        *reinterpret_cast<uint4*>(qd) = make_uint4(0, 0, 0, 0);
      } else if (!ro.on) {
        cp_async16(qd, qrow + row * HD + ch * 8);
      }
    }
    cp_async_wait_all();
  }
  __syncthreads();
  const int lane = tid & 31;
  const int g = lane >> 2, tq = lane & 3;  // mma fragment row group and column pair

  // S = q K^T: warp w scores keys [8 w, 8 w + 8) for the 16 rows.
  {
    float c[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      uint32_t a[4], b[2];
      ldmatrix_x4(a, Qs + (lane & 15) * L::kRow + kk * 16 + (lane >> 4) * 8);
      ldmatrix_x2(b, Ks + (warp * 8 + (lane & 7)) * L::kRow + kk * 16 + ((lane >> 3) & 1) * 8);
      mma_bf16(c, a, b[0], b[1]);
    }
    const float inv_cap = p.softcap > 0.f ? 1.f / p.softcap : 0.f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = g + (i >> 1) * 8, key = warp * 8 + tq * 2 + (i & 1);
      float d = c[i] * p.scale;
      if (p.softcap > 0.f) d = tanhf(d * inv_cap) * p.softcap;
      Ss[row * L::kSRow + key] = slots[key] >= 0 ? d * kLog2e : -INFINITY;
    }
  }
  __syncthreads();
  // Softmax per head: warp r takes row r (and zeroes row r + 8, and row r when r >= rep).
  {
    const int r = warp;
    float p0 = 0.f, p1 = 0.f;
    if (r < rep) {
      const float s0 = Ss[r * L::kSRow + lane], s1 = Ss[r * L::kSRow + lane + 32];
      const float mx = warp_max(fmaxf(s0, s1));
      p0 = rescale(s0, mx);
      p1 = rescale(s1, mx);
      const float l = warp_sum(p0 + p1);
      if (lane == 0) {
        fm[r] = mx;
        fl[r] = l;
      }
    }
    Ps[r * L::kPRow + lane] = __float2bfloat16_rn(p0);
    Ps[r * L::kPRow + lane + 32] = __float2bfloat16_rn(p1);
    Ps[(r + 8) * L::kPRow + lane] = __float2bfloat16_rn(0.f);
    Ps[(r + 8) * L::kPRow + lane + 32] = __float2bfloat16_rn(0.f);
  }
  __syncthreads();
  // O = P V: warp w takes dims [w HD / 8, (w + 1) HD / 8), HD / 64 column tiles of 8.
  const int64_t group = static_cast<int64_t>(s) * p.nkv + kvh;
  float* po = part + group * nsplit * kMaxRep * (HD + 2);  // [nsplit][kMaxRep][HD + 2]
  cluster_started();  // before the partials are pushed to the peers
  // Cluster merge: output pairs [P j / n_act, P (j + 1) / n_act) are merged by block j, which
  // holds S2 pairs per split.
  const int P = rep * HD / 2, S2 = (P + n_act - 1) / n_act;
  {
    constexpr int NT = HD / 64;
    float c[NT][4];
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int i = 0; i < 4; ++i) c[n][i] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kC / 16; ++kk) {
      uint32_t a[4];
      ldmatrix_x4(a, Ps + (lane & 15) * L::kPRow + kk * 16 + (lane >> 4) * 8);
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        uint32_t b[2];
        ldmatrix_x2_trans(b, Vs + (kk * 16 + (lane & 15)) * L::kRow + (warp * NT + n) * 8);
        mma_bf16(c[n], a, b[0], b[1]);
      }
    }
    if (g < rep) {  // rows g + 8 >= rep: never written
      const float inv_l = fl[g] > 0.f ? 1.f / fl[g] : 0.f;
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        const int d = (warp * NT + n) * 8 + tq * 2;
        if (n_act == 1) {
          *reinterpret_cast<__nv_bfloat162*>(out + g * HD + d) =
              __floats2bfloat162_rn(c[n][0] * inv_l, c[n][1] * inv_l);
        } else if (CLUSTER) {  // pushed to the block that merges this pair (below)
          const int pr = (g * HD + d) / 2;
          const int j = ((pr + 1) * n_act + P - 1) / P - 1, p0 = P * j / n_act;
          float2* dst = cluster_peer(reinterpret_cast<float2*>(smem_raw + L::kMO), j);
          dst[x * S2 + pr - p0] = make_float2(c[n][0], c[n][1]);
        } else {
          *reinterpret_cast<float2*>(po + (static_cast<int64_t>(x) * kMaxRep + g) * (HD + 2) + d) =
              make_float2(c[n][0], c[n][1]);
        }
      }
    }
  }
  if (n_act == 1) return;
  if constexpr (CLUSTER) {
    // Every block pushed its (max, sum) to every peer and each pair of its partial outputs to the
    // block whose slice holds the pair (pairs [P j / n, P (j + 1) / n) to block j), all before one
    // cluster barrier; then each block merges its slice from its own shared memory, and no peer
    // reads another's after the barrier, so a second one is not needed. (Block 0 pulling every
    // peer's partial, or every block pulling its slice over two barriers, measured slower.)
    float2* ml = reinterpret_cast<float2*>(smem_raw + L::kML);  // [kMaxCluster][kMaxRep]
    if (tid < rep * n_act) {
      const int r = tid / n_act, j = tid - r * n_act;
      cluster_peer(ml, j)[x * kMaxRep + r] = make_float2(fm[r], fl[r]);
    }
    cg::this_cluster().sync();
    const int p0 = P * x / n_act, p1 = P * (x + 1) / n_act;
    const float2* mo = reinterpret_cast<const float2*>(smem_raw + L::kMO);
    for (int pr = p0 + tid; pr < p1; pr += kThreads) {
      const int r = 2 * pr / HD;
      float mx = -INFINITY;
      for (int i = 0; i < n_act; ++i) mx = fmaxf(mx, ml[i * kMaxRep + r].x);
      float Lsum = 0.f, a0 = 0.f, a1 = 0.f;
      for (int i = 0; i < n_act; ++i) {
        const float2 mi = ml[i * kMaxRep + r], v = mo[i * S2 + pr - p0];
        const float w = rescale(mi.x, mx);
        Lsum += w * mi.y;
        a0 += w * v.x;
        a1 += w * v.y;
      }
      *reinterpret_cast<__nv_bfloat162*>(out + 2 * pr) =
          __floats2bfloat162_rn(Lsum > 0.f ? a0 / Lsum : 0.f, Lsum > 0.f ? a1 / Lsum : 0.f);
    }
    return;
  }

  // Several splits: this one's partial is written; the last block to arrive merges them all.
  if (tid < rep) {
    float* row = po + (static_cast<int64_t>(x) * kMaxRep + tid) * (HD + 2);
    row[HD] = fm[tid];
    row[HD + 1] = fl[tid];
  }
  __threadfence();
  __syncthreads();
  if (tid == 0) is_last = atomicAdd(&counters[group], 1) == n_act - 1;
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  // Merge: per head, the splits' weights 2^(m_i - M) into shared memory (where K was), then each
  // thread sums its output elements over the splits, kPer independent loads per split.
  float* wsm = reinterpret_cast<float*>(smem_raw + L::kK);  // [rep][n_act]
  for (int r = warp; r < rep; r += kWarps) {
    float mx = -INFINITY;
    for (int i = lane; i < n_act; i += 32)
      mx = fmaxf(mx, __ldcg(po + (static_cast<int64_t>(i) * kMaxRep + r) * (HD + 2) + HD));
    mx = warp_max(mx);
    float Lsum = 0.f;
    for (int i = lane; i < n_act; i += 32) {
      const float* row = po + (static_cast<int64_t>(i) * kMaxRep + r) * (HD + 2);
      const float w = rescale(__ldcg(row + HD), mx);
      wsm[r * n_act + i] = w;
      Lsum += w * __ldcg(row + HD + 1);
    }
    Lsum = warp_sum(Lsum);
    if (lane == 0) fl[r] = Lsum;
  }
  __syncthreads();
  constexpr int kPer = kMaxRep * HD / kThreads;
  float macc[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) macc[k] = 0.f;
#pragma unroll 1
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
      const float Lr = fl[e / HD];
      out[e] = __float2bfloat16_rn(Lr > 0.f ? macc[k] / Lr : 0.f);
    }
  }
  if (tid == 0) counters[group] = 0;
}

template <int HD, bool CLUSTER>
void launch_t(const AttnParams& p, int nsplit, float* partials, int* counters, const DecodeRope& r,
              cudaStream_t st) {
  constexpr size_t smem = CLUSTER ? DecodeSmem<HD>::kBytesCluster : DecodeSmem<HD>::kBytes;
  auto kernel = attn_decode_kernel<HD, CLUSTER>;
  static const bool configured = [&] {
    TS_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(smem)));
    if (CLUSTER)
      TS_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    return true;
  }();
  (void)configured;
  // Big grids (no cluster) keep the driver's carveout: two blocks per SM (cuda_common.h).
  launch_clusters(CLUSTER ? nsplit : 1, !CLUSTER, kernel, dim3(nsplit, p.nkv, p.num_seqs), kThreads,
                  smem, st, "attention (decode)", p, nsplit, partials, counters, r);
}

// Whether `nsplit` blocks of this kernel can run as one cluster on this GPU (cluster shapes that
// do not fit a GPC's shared memory fail to launch).
template <int HD>
bool decode_cluster_fits(int nsplit) {
  return nsplit >= 2 && nsplit <= kMaxCluster &&
         cluster_fits(reinterpret_cast<const void*>(attn_decode_kernel<HD, true>), nsplit, kThreads,
                      DecodeSmem<HD>::kBytesCluster);
}

template <int HD>
void launch_decode(const AttnParams& p, int nsplit, float* partials, int* counters,
                   const DecodeRope& r, cudaStream_t st) {
  // Only for grids that leave the GPU mostly idle (decode of a few sequences): with S = 128 the
  // clusters' co-scheduling costs more than the merge saves.
  const int64_t blocks = static_cast<int64_t>(nsplit) * p.nkv * p.num_seqs;
  if (blocks <= 64 && decode_cluster_fits<HD>(nsplit)) {
    launch_t<HD, true>(p, nsplit, partials, counters, r, st);
  } else {
    launch_t<HD, false>(p, nsplit, partials, counters, r, st);
  }
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

bool attention_decode_fits(const AttnParams& p, int nsplit) {
  // The merge keeps kMaxRep weights per split where the K tile was.
  const size_t floats = static_cast<size_t>(kC) * (p.hd + 8) * 2 / 4;
  return static_cast<size_t>(nsplit) * kMaxRep <= floats;
}

void attention_decode(const AttnParams& p, int nsplit, float* partials, int* counters,
                      cudaStream_t st, const DecodeRope* rope) {
  if (p.num_seqs == 0) return;
  const DecodeRope r = rope ? *rope : DecodeRope{};
  switch (p.hd) {
    case 64:
      launch_decode<64>(p, nsplit, partials, counters, r, st);
      break;
    case 128:
      launch_decode<128>(p, nsplit, partials, counters, r, st);
      break;
    case 256:
      launch_decode<256>(p, nsplit, partials, counters, r, st);
      break;
    default:
      throw Error(ErrorKind::internal, "attention_decode: unsupported head_dim");
  }
}

}  // namespace tessera::cuda
