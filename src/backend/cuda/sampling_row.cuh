// The sampler kernel's device pieces (sampling.cu, its only includer): the row a thread-block
// cluster samples (Row, its shared memory), the passes over the row's ids, the cluster-wide
// reductions in rank order, the radix selects of top-k and top-p, the candidate path of a small
// top-k, and the pick's prefix sums. In an anonymous namespace: one translation unit's kernel
// code, as it was when these lived in sampling.cu.
#pragma once

#include <cooperative_groups.h>

#include <cfloat>
#include <climits>
#include <type_traits>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/sampling.h"
#include "core/rng.h"

namespace tessera::cuda {

namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxCluster = 16;  // a non-portable cluster size (Hopper allows 16)
// top-p's first step: each thread's probability mass per float exponent, e in [2^-b, 2^(1-b))
// for b = 1..23 (b = 0: e = 1, the maximum), in its own column of shared memory (no atomics: a
// shared histogram of the exponents had every thread adding to the same few bins, serialised
// compare-and-swap loops that made top-p cost milliseconds at 128 rows).
// A threshold below 2^-23 (a very flat distribution) takes the full 4-pass radix select.
constexpr int kExpBins = 24;
constexpr size_t kBinBytes = sizeof(double) * kExpBins * kThreads;
// The pick gives each thread a contiguous range of ids up to this long (one row over a cluster
// of >= 4 blocks at V = 262,144); longer ranges go to warps reading slabs of 128 ids (a thread's
// own range of 256 ids made each load of a warp touch 32 lines).
constexpr int kThreadChunk = 64;
// top-k up to this k takes the candidate path (topk_small): the k-th largest of each block's
// per-thread maxima bounds the row's k-th largest from below, the ids at or above the bound
// (about k of them) go to rank 0's shared memory, and the rest of the chain runs on them there;
// more than kMaxCand candidates fall back to the radix select over the row.
constexpr int kMaxTopKSmall = 256;
constexpr int kMaxCand = kThreads;

struct Shared {
  unsigned int hist[2][256];
  double hsum[2][256];
  unsigned int scan_u[8];  // the bins' suffix scan: per-warp totals
  double scan_d[8];
  unsigned int sub_u;  // the mass (count) of the bins above the chosen one
  double sub_d;
  double red_d[kWarps];
  float red_f[kWarps];
  int red_i[kWarps];
  float cf[2];  // per-block partials of a cluster reduction (two slots, alternating)
  double cd[2];
  int ci[2];
  double bmass[kExpBins];  // this block's mass per exponent bin (read by the cluster's peers)
  double bsum[kExpBins];   // the row's, over the cluster
  int winner;
  int cwin;   // rank 0: the lowest global thread that claims the pick
  int cpick;  // rank 0: the picked id
  int ncand;  // rank 0: topk_small's candidates
};

// The C blocks (a thread-block cluster) that sample one row: global thread g = rank * kThreads +
// tid takes ids g, g + S, ... (S = C kThreads); block results combine through distributed shared
// memory in rank order, so every block computes the same values.
struct Row {
  cg::cluster_group cl;
  Shared& sh;
  int rank, C, g, S;
  int slot = 0;
  __device__ explicit Row(Shared& s) : cl(cg::this_cluster()), sh(s) {
    rank = static_cast<int>(cl.block_rank());
    C = static_cast<int>(cl.num_blocks());
    g = rank * kThreads + static_cast<int>(threadIdx.x);
    S = C * kThreads;
  }
  template <class T>
  __device__ T* peer(T* p, int q) {
    return cl.map_shared_rank(p, q);
  }
};

__device__ __forceinline__ unsigned int float_key(float v) {
  const unsigned int u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float key_float(unsigned int k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// Calls f(i, x[i]) for this thread's ids of [0, V): by 16-byte loads of 4 ids (thread g: ids
// 4 (g + k S) .. + 3, several loads in flight) when x is 16-byte aligned, then the tail; one id at
// a time otherwise. With one block per row, a pass of 4-byte loads kept ~4 KB in flight per SM:
// latency-bound (a tenth of a millisecond per pass over a 1 MB row).
template <class F>
__device__ __forceinline__ void for_ids(const float* x, int V, const Row& c, F&& f) {
  int i = c.g;
  if ((reinterpret_cast<uintptr_t>(x) & 15) == 0) {
    const int V4 = V >> 2;
    const float4* x4 = reinterpret_cast<const float4*>(x);
#pragma unroll 4
    for (int q = c.g; q < V4; q += c.S) {
      const float4 v = x4[q];
      f(4 * q, v.x);
      f(4 * q + 1, v.y);
      f(4 * q + 2, v.z);
      f(4 * q + 3, v.w);
    }
    i = 4 * V4 + c.g;
  }
  for (; i < V; i += c.S) f(i, x[i]);
}

__device__ float block_max_f(float v, Shared& sh) {
  v = warp_max(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh.red_f[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = sh.red_f[threadIdx.x & 31];
  return warp_max(t);
}

__device__ double block_sum_d(double v, Shared& sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh.red_d[threadIdx.x >> 5] = v;
  __syncthreads();
  double t = sh.red_d[threadIdx.x & 31];
  for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
  return t;
}

// Cluster reductions: the block's result into this block's slot, one cluster barrier, then each
// thread combines the C slots in rank order. Slots alternate, so a slot is written again only
// after the barrier of the next reduction, by which time every peer has read it.
template <class T, class Op>
__device__ T row_combine(T v, T (&slots)[2], Row& c, Op op) {
  if (c.C == 1) return v;
  const int s = c.slot ^= 1;
  if (threadIdx.x == 0) slots[s] = v;
  c.cl.sync();
  T t = *c.peer(&slots[s], 0);
  for (int q = 1; q < c.C; ++q) t = op(t, *c.peer(&slots[s], q));
  return t;
}
__device__ float row_max_f(float v, Row& c) {
  return row_combine(block_max_f(v, c.sh), c.sh.cf, c,
                     [](float a, float b) { return fmaxf(a, b); });
}
__device__ double row_sum_d(double v, Row& c) {
  return row_combine(block_sum_d(v, c.sh), c.sh.cd, c, [](double a, double b) { return a + b; });
}

// before() and warp_argmax(): device_math.cuh (the LM head's fused greedy pick uses them too).
__device__ void block_argmax(float& v, int& i, Shared& sh) {
  warp_argmax(v, i);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) {
    sh.red_f[threadIdx.x >> 5] = v;
    sh.red_i[threadIdx.x >> 5] = i;
  }
  __syncthreads();
  v = sh.red_f[threadIdx.x & 31];
  i = sh.red_i[threadIdx.x & 31];
  warp_argmax(v, i);
}
__device__ void row_argmax(float& v, int& i, Row& c) {
  block_argmax(v, i, c.sh);
  if (c.C == 1) return;
  const int s = c.slot ^= 1;
  if (threadIdx.x == 0) c.sh.cf[s] = v, c.sh.ci[s] = i;
  c.cl.sync();
  v = -INFINITY;
  i = -1;
  for (int q = 0; q < c.C; ++q) {
    const float qv = *c.peer(&c.sh.cf[s], q);
    const int qi = *c.peer(&c.sh.ci[s], q);
    if (qi >= 0 && before(qv, qi, v, i)) v = qv, i = qi;
  }
}

// Argmax over x (lowest id on ties); elements strictly after (pv, pi) in that order only.
__device__ int argmax_after(const float* x, int V, float pv, int pi, float* best_v, Row& c) {
  float bv = -INFINITY;
  int bi = -1;
  for (int i = c.g; i < V; i += c.S) {
    float v = x[i];
    if (v != v) v = -INFINITY;
    if (pi >= 0 && !(v < pv || (v == pv && i > pi))) continue;
    if (before(v, i, bv, bi)) bv = v, bi = i;
  }
  row_argmax(bv, bi, c);
  *best_v = bv;
  return bi;
}

// The 256 bins' suffix sums, bin d held by thread d (threads >= 256 pass 0): thread d < 256 gets
// the sum over bins >= d. Every thread of the block calls it (one block barrier inside). A
// radix pass picks its bin from these in parallel instead of one thread walking 256 bins in
// series while the block waits (microseconds per pass at decode).
template <class T>
__device__ T bin_suffix(T x, T* warp_tot) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  for (int o = 1; o < 32; o <<= 1) {
    const T y = __shfl_down_sync(0xffffffffu, x, o);
    if (lane + o < 32) x += y;
  }
  if (w < 8 && lane == 0) warp_tot[w] = x;
  __syncthreads();
  if (w < 8)
    for (int v = w + 1; v < 8; ++v) x += warp_tot[v];
  return x;
}

// One pass of a radix select over the row x: for this thread's ids whose key matches `prefix`
// under `mask` (key(x[i], k, w) false: skip), w into bin (k >> shift) & 255 of this pass's
// histogram; the bins totalled over the cluster; the largest bin d whose suffix total passes
// ok(d, suffix) (`none` when no bin does), returned, with the total of the bins above it in
// `above`. Every
// thread adding to the same few bins serialises the shared-memory atomics (the float keys' top
// byte puts nearly every id in a few bins): counts add once per bin per warp; masses (a double
// add is a compare-and-swap loop) sum runs of one bin in a register first. Every thread calls it.
template <class T, class Key, class Ok>
__device__ int radix_pass(Row& c, T (&hist)[2][256], T* warp_tot, T& sub, const float* x,
                          const int V, Key key, unsigned int prefix, unsigned int mask, int shift,
                          Ok ok, int none, T& above) {
  const int s = c.slot ^= 1, tid = threadIdx.x;
  for (int i = tid; i < 256; i += kThreads) hist[s][i] = T(0);
  __syncthreads();
  if (std::is_same_v<T, unsigned int> && V / c.S > kThreadChunk) {
    // Counts (w = 1) with one block per row: the lanes of a warp with the same bin add their
    // number once (1,108 -> 966 us for top-k at 128 rows; with clusters the runs below are
    // cheaper). The loop is warp-uniform for __match_any_sync.
    const int lane = tid & 31;
    for (int i0 = c.g - lane; i0 < V; i0 += c.S) {
      const int i = i0 + lane;
      unsigned int k, b = 256;
      T w;
      if (i < V && key(x[i], k, w) && (k & mask) == prefix) b = (k >> shift) & 255u;
      const unsigned int peers = __match_any_sync(0xffffffffu, b);
      if (b < 256 && lane == __ffs(peers) - 1) atomicAdd(&hist[s][b], T(__popc(peers)));
    }
  } else {
    unsigned int run_bin = 256;
    T run = T(0);
    for_ids(x, V, c, [&](int, float v) {
      unsigned int k;
      T w;
      if (!key(v, k, w) || (k & mask) != prefix) return;
      const unsigned int b = (k >> shift) & 255u;
      if (b != run_bin) {
        if (run_bin < 256) atomicAdd(&hist[s][run_bin], run);
        run_bin = b;
        run = T(0);
      }
      run += w;
    });
    if (run_bin < 256) atomicAdd(&hist[s][run_bin], run);
  }
  c.cl.sync();
  T t = T(0);
  if (tid < 256)
    for (int q = 0; q < c.C; ++q) t += *c.peer(&hist[s][tid], q);
  if (tid == 0) c.sh.winner = none, sub = T(0);
  const T suf = bin_suffix(t, warp_tot);
  if (tid < 256 && ok(tid, suf)) atomicMax(&c.sh.winner, tid);
  __syncthreads();
  const int bin = c.sh.winner;
  if (bin >= 0 && tid == bin + 1 && tid < 256) sub = suf;
  __syncthreads();
  above = sub;  // written again only after the next pass's cluster barrier
  return bin;
}

// The k-th largest value of x[0, V) (counting duplicates), by radix select on the float keys.
__device__ float kth_largest(const float* x, int V, int k, Row& c) {
  unsigned int prefix = 0, mask = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    // The largest bin d >= 1 whose suffix count reaches k (else 0), as a walk down from bin 255
    // would stop; k loses the count of the bins above it.
    unsigned int above;
    const int bin = radix_pass(
        c, c.sh.hist, c.sh.scan_u, c.sh.sub_u, x, V,
        [&](float v, unsigned int& key, unsigned int& w) {
          key = float_key(v);
          w = 1;
          return true;
        },
        prefix, mask, shift,
        [&](int d, unsigned int suf) { return d >= 1 && suf >= static_cast<unsigned int>(k); }, 0,
        above);
    k -= static_cast<int>(above);
    prefix |= static_cast<unsigned int>(bin) << shift;
    mask |= 255u << shift;
  }
  return key_float(prefix);
}

// The largest value v among e[0, V) (non-negative) with sum(e >= v) >= target; 0 when no value
// reaches it (keep everything). Starts from keys with (key & mask) == prefix whose larger values
// hold `above` (all keys: 0, 0, 0.0) at digit `shift` (24, else 15 after a known exponent; then
// 8-bit digits down to 0: the last digit's top bit is already in the prefix). `exact`: the bits
// above are known to hold the crossing, so a pass that finds no bin by rounding takes digit 0.
__device__ float top_p_threshold(const float* e, int V, double target, Row& c,
                                 unsigned int prefix = 0, unsigned int mask = 0, double above = 0.0,
                                 int shift = 24, bool exact = false) {
  for (;; shift = shift > 8 ? shift - 8 : 0) {
    // The largest bin whose suffix mass brings `above` to the target.
    double sub;
    const int bin = radix_pass(
        c, c.sh.hsum, c.sh.scan_d, c.sh.sub_d, e, V,
        [&](float v, unsigned int& key, double& w) {
          key = __float_as_uint(v);
          w = static_cast<double>(v);
          return v > 0.f;
        },
        prefix, mask, shift, [&](int, double suf) { return above + suf >= target; }, -1, sub);
    if (bin < 0 && !exact) return 0.f;
    if (bin >= 0) {
      above += sub;
      prefix |= static_cast<unsigned int>(bin) << shift;
    }
    mask |= 255u << shift;
    if (shift == 0) break;
  }
  return __uint_as_float(prefix);
}

// top-p's threshold from the exponent bins of pass 2 (this thread's column: bins[b * kThreads +
// tid]): the bins summed over the block in a fixed order, then over the cluster in rank order;
// the first exponent (from e = 1 down) whose mass brings the running total to `target` holds the
// threshold, and 3 radix passes over its ids find it. Below 2^-23: the full radix select.
__device__ float top_p_from_bins(const float* e, int V, double target, const double* bins, Row& c) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  __syncthreads();
  if (warp < kExpBins) {
    double t = 0.0;
    for (int k = lane; k < kThreads; k += 32) t += bins[warp * kThreads + k];
    for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
    if (lane == 0) c.sh.bmass[warp] = t;
  }
  c.cl.sync();
  if (tid < kExpBins) {
    double m = 0.0;
    for (int q = 0; q < c.C; ++q) m += *c.peer(&c.sh.bmass[tid], q);
    c.sh.bsum[tid] = m;
  }
  __syncthreads();
  double above = 0.0;
  int bin = -1;
  for (int b = 0; b < kExpBins; ++b) {
    const double m = c.sh.bsum[b];
    if (above + m >= target) {
      bin = b;
      break;
    }
    above += m;
  }
  if (bin < 0) return top_p_threshold(e, V, target, c);
  return top_p_threshold(e, V, target, c, static_cast<unsigned int>(127 - bin) << 23, 0xff800000u,
                         above, 15, true);
}

// Sorts s[0, kThreads) descending in place (bitonic network, one element per thread); every
// thread calls it.
__device__ void block_sort_desc(float* s) {
  const int t = threadIdx.x;
  for (int k = 2; k <= kThreads; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      __syncthreads();
      const int p = t ^ j;
      if (p > t) {
        const float a = s[t], b = s[p];
        const bool desc = (t & k) == 0;
        if (desc ? a < b : a > b) s[t] = b, s[p] = a;
      }
    }
  }
  __syncthreads();
}

// top-k (k <= kMaxTopKSmall) and the rest of the chain on the candidates only. v = L / T.
// Returns false (nothing decided, the caller runs the full chain) when the candidates overflow;
// otherwise rank 0 has written the pick to sh.cpick. `buf`: the dynamic shared memory.
__device__ bool topk_small(const float* L, int V, const SampleRowDev& P, Row& c, float* buf) {
  const int tid = threadIdx.x;
  Shared& sh = c.sh;
  const float T = P.temperature;
  // The k-th largest of this block's per-thread maxima: the block holds k distinct ids at or
  // above it, so the row's k-th largest is too. The bound: the largest over the cluster.
  float tmax = -INFINITY;
  for_ids(L, V, c, [&](int, float x) { tmax = fmaxf(tmax, x / T); });  // NaN: skipped by fmaxf
  buf[tid] = tmax;
  block_sort_desc(buf);  // no peer writes rank 0's buf before row_max_f's cluster barrier
  if (c.rank == 0 && tid == 0) sh.ncand = 0;
  const float bound = row_max_f(buf[P.top_k - 1], c);  // its cluster barrier orders ncand = 0
  float* cv = c.peer(buf, 0);                          // rank 0's: values, then ids
  int* ci = reinterpret_cast<int*>(c.peer(buf + kMaxCand, 0));
  int* cn = c.peer(&sh.ncand, 0);
  for_ids(L, V, c, [&](int i, float x) {
    const float v = x / T;
    if (v >= bound) {
      const int at = atomicAdd(cn, 1);
      if (at < kMaxCand) cv[at] = v, ci[at] = i;
    }
  });
  c.cl.sync();
  const int n = *cn;
  if (n > kMaxCand || n < P.top_k) return false;  // (fewer than k: NaNs in the row)
  if (c.rank != 0) return true;
  // Rank 0 alone from here: order the candidates by (value descending, id ascending).
  float* sv = buf + 2 * kMaxCand;  // values and ids in that order
  int* sid = reinterpret_cast<int*>(buf + 3 * kMaxCand);
  double* se = reinterpret_cast<double*>(buf + 4 * kMaxCand);  // e of the kept, same order
  int* kid = reinterpret_cast<int*>(buf + 6 * kMaxCand);       // the kept's positions by id
  const float* v0 = buf;
  const int* i0 = reinterpret_cast<const int*>(buf + kMaxCand);
  if (tid < n) {
    const float v = v0[tid];
    const int id = i0[tid];
    int r = 0;
    for (int j = 0; j < n; ++j) {
      const float u = v0[j];
      r += u > v || (u == v && i0[j] < id);
    }
    sv[r] = v;
    sid[r] = id;
  }
  __syncthreads();
  const float kth = sv[P.top_k - 1];  // n >= k: the bound's block has k ids at or above it
  const float mx = sv[0];
  // The kept (v >= kth) are a prefix of the order; their ids ascending for the pick.
  int m = 0;
  while (m < n && sv[m] >= kth) ++m;  // every thread, from shared memory
  if (tid < m) {
    const int id = sid[tid];
    int r = 0;
    for (int j = 0; j < m; ++j) r += sid[j] < id;
    kid[r] = tid;  // position in the value order
    se[tid] = static_cast<float>(exp(static_cast<double>(sv[tid] - mx)));
  }
  __syncthreads();
  if (tid == 0) {
    // The total of e = exp(v - max), top-p's threshold over the value order (ties together),
    // min-p, then the walk in id order: the full chain's arithmetic on the same ids.
    double total = 0.0;
    for (int j = 0; j < m; ++j) total += se[j];
    float th = 0.f;
    if (P.top_p < 1.0f) {
      const double target = static_cast<double>(P.top_p) * total;
      double cum = 0.0;
      for (int j = 0; j < m;) {
        int j1 = j;
        while (j1 < m && se[j1] == se[j]) cum += se[j1++];
        if (cum >= target) {
          th = static_cast<float>(se[j]);
          break;
        }
        j = j1;
      }
    }
    const double cut = P.min_p > 0.0f ? static_cast<double>(P.min_p) : 0.0;
    auto keep = [&](double e) { return e > 0.0 && e >= th && e >= cut; };
    double kept = 0.0;
    for (int r = 0; r < m; ++r)
      if (keep(se[kid[r]])) kept += se[kid[r]];
    const double target = sample_uniform(P.seed, P.step) * kept;
    double cum = 0.0;
    int pick = -1;
    for (int r = 0; r < m; ++r) {
      const double e = se[kid[r]];
      if (!keep(e)) continue;
      cum += e;
      pick = sid[kid[r]];
      if (cum > target) break;
    }
    sh.cpick = max(pick, 0);
  }
  return true;
}

// Inclusive prefix sum of x over the warp's lanes, in lane order.
__device__ __forceinline__ double warp_incl_sum(double x) {
  const int lane = threadIdx.x & 31;
  for (int o = 1; o < 32; o <<= 1) {
    const double y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  return x;
}

// The pick's prefix sums: the mass before this warp's ids (its block's earlier warps, then the
// cluster's earlier blocks), from `incl`, an inclusive scan over the warp's lanes (lane 31 holds
// the warp's total); the row's total into `kept`. Every thread calls it.
__device__ double warp_prefix(double incl, Row& c, double& kept) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  Shared& sh = c.sh;
  __syncthreads();
  if (lane == 31) sh.red_d[warp] = incl;
  __syncthreads();
  if (tid < 32) sh.red_d[tid] = warp_incl_sum(sh.red_d[tid]);  // inclusive totals per warp
  __syncthreads();
  const double warp_before = warp > 0 ? sh.red_d[warp - 1] : 0.0;
  const int s = c.slot ^= 1;
  if (tid == 0) sh.cd[s] = sh.red_d[kWarps - 1];
  c.cl.sync();
  double blocks_before = 0.0;
  kept = 0.0;
  for (int q = 0; q < c.C; ++q) {
    const double t = *c.peer(&sh.cd[s], q);
    if (q < c.rank) blocks_before += t;
    kept += t;
  }
  return blocks_before + warp_before;
}

}  // namespace

}  // namespace tessera::cuda
