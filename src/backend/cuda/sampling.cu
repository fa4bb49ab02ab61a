// GPU sampler: a cluster of up to 16 1024-thread blocks per row (as many as the SMs allow for
// the batch; their partial results meet in distributed shared memory), no sort of the
// vocabulary. top-k up to 256 works on about k candidates in one block's shared memory
// (topk_small); a larger k finds the k-th largest value by a 4-pass radix select on the float
// bits (8-bit digits, counts). top-p finds the exponent of its threshold from per-thread mass bins
// filled while the probabilities are computed, then the mantissa by 3 radix passes over the ids
// of that exponent (probability-mass histograms); the pick walks kept ids in ascending order as a
// cluster-wide prefix sum over contiguous id ranges (a thread's, or with one block per row a
// warp's), then the range that holds the target is walked. Passes over the row: the maximum, the
// probabilities (the one write), top-p's 3, the pick. Probabilities
// are exp(v - max) stored as floats, sums in double, as cpu/sampling.cpp computes them, so picks
// agree except at near-ties.
#include <cooperative_groups.h>

#include <algorithm>
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
// compare-and-swap loops that made top-p cost ~1.5 ms at 128 rows, bench/NOTES-cuda.md run 20).
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
// latency-bound, ~0.1 ms per pass over a 1 MB row (bench/NOTES-cuda.md run 20).
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
// series while the block waits (~5 us per pass at decode, bench/NOTES-cuda.md run 19).
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

// grid (C, R), clusters of C along x: row r = blockIdx.y.
__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* __restrict__ logits, int64_t stride, int V,
                  const SampleRowDev* __restrict__ rows, const int32_t* __restrict__ pen_ids,
                  const int32_t* __restrict__ pen_counts, const int32_t* __restrict__ sup_ids,
                  float* __restrict__ work, int32_t* __restrict__ ids, float* __restrict__ lp,
                  int32_t* __restrict__ top_ids, float* __restrict__ top_lp, int top_n_max) {
  pdl_enter();
  __shared__ Shared sh;
  extern __shared__ double bins[];  // [kExpBins][kThreads] (sample_rows' dynamic shared memory)
  Row c(sh);
  const int r = blockIdx.y, tid = threadIdx.x;
  const bool lead = c.rank == 0 && tid == 0;  // writes the row's outputs
  const SampleRowDev P = rows[r];
  const float* raw = logits + static_cast<int64_t>(r) * stride;
  float* w = P.work_row >= 0 ? work + static_cast<int64_t>(P.work_row) * V : nullptr;
  const float* L = raw;
  // A copy only for the penalties; otherwise the passes below read the raw row.
  if (w && (P.rep_count > 0 || P.freq_count > 0 || P.suppress_count > 0)) {
    for (int i = c.g; i < V; i += c.S) w[i] = raw[i];
    c.cl.sync();  // the penalties below touch ids copied by other blocks
    if (c.rank == 0) {
      for (int i = tid; i < P.rep_count; i += kThreads) {
        const int id = pen_ids[P.rep_begin + i];
        const float x = w[id];
        w[id] = x > 0 ? x / P.repetition_penalty : x * P.repetition_penalty;
      }
      __syncthreads();
      for (int i = tid; i < P.freq_count; i += kThreads) {
        const int id = pen_ids[P.freq_begin + i];
        w[id] -= P.presence_penalty +
                 P.frequency_penalty * static_cast<float>(pen_counts[P.freq_begin + i]);
      }
      __syncthreads();
      for (int i = tid; i < P.suppress_count; i += kThreads)
        w[sup_ids[P.suppress_begin + i]] = -INFINITY;
    }
    c.cl.sync();
    L = w;
  }

  int chosen;
  if (P.temperature <= 0.f) {
    float bv;
    chosen = argmax_after(L, V, 0.f, -1, &bv, c);
    if (chosen < 0) chosen = 0;
  } else if (P.top_k > 0 && P.top_k <= kMaxTopKSmall && P.top_k < V &&
             topk_small(L, V, P, c, reinterpret_cast<float*>(bins))) {
    c.cl.sync();
    chosen = sh.cpick;  // rank 0's (its lead is the only reader)
  } else {
    // w exists for every row with a temperature. Until the pick, each thread touches its own ids.
    // v = L / T (as the CPU divides); with top-k, v is materialised first for its radix select.
    const float* X = L;
    float div = P.temperature, kth = -INFINITY;
    if (P.top_k > 0 && P.top_k < V) {
      for (int i = c.g; i < V; i += c.S) w[i] = L[i] / P.temperature;
      c.cl.sync();  // the radix passes read ids by 16-byte loads, written by other threads
      X = w;
      div = 1.f;  // x / 1 = x: the same v
      kth = kth_largest(w, V, P.top_k, c);
    }
    auto value = [&](float x) {
      const float v = x / div;
      return v < kth ? -INFINITY : v;
    };
    float mx = -INFINITY;
    for_ids(X, V, c, [&](int, float x) { mx = fmaxf(mx, value(x)); });
    mx = row_max_f(mx, c);
    // e = exp(v - max) into w, their total, and with top-p each thread's mass per exponent.
    const bool top_p = P.top_p < 1.0f;
    double* col = bins + threadIdx.x;
    if (top_p)
      for (int b = 0; b < kExpBins; ++b) col[b * kThreads] = 0.0;
    double total = 0.0;
    for_ids(X, V, c, [&](int i, float x) {
      const float v = value(x);
      const float e = v == -INFINITY ? 0.f : static_cast<float>(exp(static_cast<double>(v - mx)));
      w[i] = e;
      total += e;
      if (top_p && e > 0.f) {
        const int b = 127 - static_cast<int>(__float_as_uint(e) >> 23);
        if (b < kExpBins) col[b * kThreads] += e;
      }
    });
    total = row_sum_d(total, c);
    const float th =
        top_p ? top_p_from_bins(w, V, static_cast<double>(P.top_p) * total, bins, c) : 0.f;
    // min-p against the largest kept probability: e = exp(0) = 1 at the maximum, which top-k and
    // top-p both keep.
    const double cut = P.min_p > 0.0f && mx > -INFINITY ? static_cast<double>(P.min_p) : 0.0;
    auto keep = [&](float e) { return e > 0.f && e >= th && static_cast<double>(e) >= cut; };
    if (lead) sh.cwin = INT_MAX;
    c.cl.sync();  // every block's weights are final; the pick reads contiguous ranges
    // Pick. Short ranges (C >= 4 at Gemma's vocabulary): global thread g owns ids [g * chunk,
    // (g + 1) * chunk); a cluster-wide prefix sum finds the thread whose range holds the target,
    // and it walks its range. Long ranges: per warp, below.
    float lk;
    int wg;
    const int chunk = (V + c.S - 1) / c.S;
    if (chunk <= kThreadChunk) {
      const int i0 = min(V, c.g * chunk), i1 = min(V, i0 + chunk);
      double local = 0.0;
      int last_kept = -1;
      for (int i = i0; i < i1; ++i)
        if (keep(w[i])) local += w[i], last_kept = i;
      // Inclusive scan of `local` over the block (warp scans, then warp totals), then the
      // blocks' totals over the cluster.
      const double incl = warp_incl_sum(local);
      double kept;
      const double before = warp_prefix(incl, c, kept) + incl - local;
      const double target = sample_uniform(P.seed, P.step) * kept;
      if (local > 0.0 && before <= target && target < before + local)
        atomicMin(c.peer(&sh.cwin, 0), c.g);
      // The last kept id overall, for a target that rounding puts past the end (the
      // reduction's barriers also publish the claims).
      lk = row_max_f(static_cast<float>(last_kept), c);
      wg = *c.peer(&sh.cwin, 0);
      if (c.g == wg) {
        double cum = before;
        int pick = last_kept;
        for (int i = i0; i < i1; ++i) {
          if (!keep(w[i])) continue;
          cum += w[i];
          if (cum > target) {
            pick = i;
            break;
          }
        }
        *c.peer(&sh.cpick, 0) = pick;
      }
    } else {
      // Global warp gw owns ids [gw * span, (gw + 1) * span), read in slabs of 128 ids (lane l:
      // ids base + 128 j + 4 l .. + 3, one 16-byte load, so each load of the warp is whole
      // lines; a thread walking a contiguous range of its own made every load of a warp touch 32
      // lines) and summed in 32 groups of gs slabs, group t's kept mass held by lane t.
      const int lane = tid & 31, warp = tid >> 5, gw = c.rank * kWarps + warp;
      const int nw = c.C * kWarps;
      const int span = ((V + nw - 1) / nw + 127) / 128 * 128;
      const int slabs = span / 128, gs = (slabs + 31) / 32;
      const int base = gw * span;
      const bool vec = (reinterpret_cast<uintptr_t>(w) & 15) == 0;
      // This lane's 4 ids of slab j (zero past the end), dropped ones zeroed.
      auto slab = [&](int j) {
        const int i = base + 128 * j + 4 * lane;
        float4 e = make_float4(0.f, 0.f, 0.f, 0.f);
        if (vec && i + 3 < V) {
          e = *reinterpret_cast<const float4*>(w + i);
        } else {
          if (i < V) e.x = w[i];
          if (i + 1 < V) e.y = w[i + 1];
          if (i + 2 < V) e.z = w[i + 2];
          if (i + 3 < V) e.w = w[i + 3];
        }
        return make_float4(keep(e.x) ? e.x : 0.f, keep(e.y) ? e.y : 0.f, keep(e.z) ? e.z : 0.f,
                           keep(e.w) ? e.w : 0.f);
      };
      double group = 0.0;
      int last_kept = -1;
      for (int t = 0; t < 32; ++t) {
        double acc = 0.0;
        const int j1 = min(slabs, (t + 1) * gs);
#pragma unroll 4
        for (int j = t * gs; j < j1; ++j) {
          const float4 e = slab(j);
          const int i = base + 128 * j + 4 * lane;
          acc += e.x;
          acc += e.y;
          acc += e.z;
          acc += e.w;
          if (e.w > 0.f) {
            last_kept = i + 3;
          } else if (e.z > 0.f) {
            last_kept = i + 2;
          } else if (e.y > 0.f) {
            last_kept = i + 1;
          } else if (e.x > 0.f) {
            last_kept = i;
          }
        }
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (lane == t) group = acc;
      }
      // Inclusive scan of the groups over the warp (lane order is id order), the warps' totals
      // over the block, then the blocks' over the cluster.
      const double incl = warp_incl_sum(group);
      const double warp_tot = __shfl_sync(0xffffffffu, incl, 31);
      double kept;
      const double prefix = warp_prefix(incl, c, kept);  // the kept mass before this warp's ids
      const double target = sample_uniform(P.seed, P.step) * kept;
      if (lane == 0 && warp_tot > 0.0 && prefix <= target && target < prefix + warp_tot)
        atomicMin(c.peer(&sh.cwin, 0), gw);
      // The last kept id overall, for a target that rounding puts past the end (the
      // reduction's barriers also publish the claims).
      lk = row_max_f(static_cast<float>(last_kept), c);
      wg = *c.peer(&sh.cwin, 0);
      if (gw == wg) {
        // The group whose end passes the target, then its slabs, then the lane's 4 ids: the
        // first kept id whose running mass passes the target, where the CPU's walk stops.
        const unsigned over = __ballot_sync(0xffffffffu, prefix + incl > target);
        int pick = -1;
        if (over) {
          const int t = __ffs(over) - 1;
          double cum = prefix + __shfl_sync(0xffffffffu, incl - group, t);
          const int j1 = min(slabs, (t + 1) * gs);
          for (int j = t * gs; j < j1 && pick < 0; ++j) {
            const float4 e = slab(j);
            const double mine = static_cast<double>(e.x) + e.y + e.z + e.w;
            const double sc = warp_incl_sum(mine);
            const unsigned hit = __ballot_sync(0xffffffffu, mine > 0.0 && cum + sc > target);
            if (hit) {
              const int h = __ffs(hit) - 1;
              int p = -1;
              if (lane == h) {
                double r = cum + sc - mine;
                const float v[4] = {e.x, e.y, e.z, e.w};
                int last = -1;
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                  if (!(v[k] > 0.f)) continue;
                  last = k;
                  r += v[k];
                  if (p < 0 && r > target) p = k;
                }
                if (p < 0) p = last;  // rounding within the lane: its last kept id
              }
              pick = base + 128 * j + 4 * h + __shfl_sync(0xffffffffu, p, h);
            }
            cum += __shfl_sync(0xffffffffu, sc, 31);
          }
        }
        if (pick < 0) {  // rounding: the warp's last kept id
          pick = last_kept;
          for (int o = 16; o > 0; o >>= 1) pick = max(pick, __shfl_xor_sync(0xffffffffu, pick, o));
        }
        if (lane == 0) *c.peer(&sh.cpick, 0) = pick;
      }
    }
    c.cl.sync();
    chosen = wg != INT_MAX ? *c.peer(&sh.cpick, 0) : max(0, static_cast<int>(lk));
  }
  if (lead) ids[r] = chosen;

  if (P.want_logprob || P.top_n > 0) {
    float mx = -INFINITY;
    for (int i = c.g; i < V; i += c.S) mx = fmaxf(mx, raw[i]);
    mx = row_max_f(mx, c);
    double sum = 0.0;
    for (int i = c.g; i < V; i += c.S) sum += exp(static_cast<double>(raw[i] - mx));
    sum = row_sum_d(sum, c);
    const float lse = mx + static_cast<float>(log(sum));
    if (lead) lp[r] = raw[chosen] - lse;
    float pv = 0.f;
    int pi = -1;
    for (int k = 0; k < P.top_n; ++k) {
      float bv;
      const int bi = argmax_after(raw, V, pv, pi, &bv, c);
      if (lead) {
        top_ids[static_cast<int64_t>(r) * top_n_max + k] = bi;
        top_lp[static_cast<int64_t>(r) * top_n_max + k] = bi >= 0 ? raw[bi] - lse : -INFINITY;
      }
      pv = bv;
      pi = bi;
      if (bi < 0) break;
    }
  }
  c.cl.sync();  // no block leaves while a peer may still read its shared memory
}

// MANY: few blocks per row, each thread with many rounds of loads (greedy_rows).
template <bool MANY>
__global__ void __launch_bounds__(256)
    greedy_kernel(const float* __restrict__ logits, int64_t stride, int V, float* __restrict__ part,
                  int* __restrict__ counters, int32_t* __restrict__ ids) {
  pdl_enter();
  __shared__ float wv[8];
  __shared__ int wi[8];
  __shared__ int is_last;
  const int r = blockIdx.y, b = blockIdx.x, nb = gridDim.x, tid = threadIdx.x;
  const int chunk = ((V + nb - 1) / nb + 3) / 4 * 4;
  const int i0 = min(V, b * chunk), i1 = min(V, i0 + chunk);
  const float* row = logits + static_cast<int64_t>(r) * stride;
  float bv = -INFINITY;
  int bi = -1;
  auto take = [&](float v, int i) { argmax_take(v, i, bv, bi); };
  int i = i0;
  if (reinterpret_cast<uintptr_t>(row + i0) % 16 == 0) {
    constexpr int kStep = 4 * 256;  // floats per block per round of 16-byte loads
    constexpr int kLoads = 4;       // 8 measured the same (bench/NOTES-cuda.md run 22)
    int k = i0 + 4 * tid;
    // Few blocks per row (many rows): four loads issued before any is used, so that a thread
    // keeps 64 bytes in flight (the compiler left the unrolled loop's loads in series).
    if constexpr (MANY) {
      for (; k + (kLoads - 1) * kStep + 3 < i1; k += kLoads * kStep) {
        float4 v[kLoads];
#pragma unroll
        for (int u = 0; u < kLoads; ++u)
          v[u] = __ldcs(reinterpret_cast<const float4*>(row + k + u * kStep));
#pragma unroll
        for (int u = 0; u < kLoads; ++u) {
          take(v[u].x, k + u * kStep);
          take(v[u].y, k + u * kStep + 1);
          take(v[u].z, k + u * kStep + 2);
          take(v[u].w, k + u * kStep + 3);
        }
      }
    }
#pragma unroll 4
    for (; k + 3 < i1; k += kStep) {
      const float4 v = __ldcs(reinterpret_cast<const float4*>(row + k));
      take(v.x, k);
      take(v.y, k + 1);
      take(v.z, k + 2);
      take(v.w, k + 3);
    }
    i = i0 + (i1 - i0) / 4 * 4;
  }
  for (int k = i + tid; k < i1; k += 256) take(row[k], k);
  block256_argmax(bv, bi, wv, wi);
  if (tid == 0) {
    part[(static_cast<int64_t>(r) * nb + b) * 2] = bv;
    part[(static_cast<int64_t>(r) * nb + b) * 2 + 1] = __int_as_float(bi);
    __threadfence();
    is_last = atomicAdd(&counters[r], 1) == nb - 1;
  }
  __syncthreads();
  if (!is_last || tid >= 32) return;
  __threadfence();
  bv = -INFINITY;
  bi = -1;
  for (int k = tid; k < nb; k += 32) {
    const float v = __ldcg(part + (static_cast<int64_t>(r) * nb + k) * 2);
    const int id = __float_as_int(__ldcg(part + (static_cast<int64_t>(r) * nb + k) * 2 + 1));
    if (id >= 0 && before(v, id, bv, bi)) bv = v, bi = id;
  }
  warp_argmax(bv, bi);
  if (tid == 0) {
    ids[r] = bi < 0 ? 0 : bi;
    counters[r] = 0;
  }
}

// Whether clusters of `n` sampling blocks can run on this GPU.
bool sample_cluster_fits(int n) {
  return n <= 1 || (n <= kMaxCluster && cluster_fits(reinterpret_cast<const void*>(sample_kernel),
                                                     n, kThreads, kBinBytes));
}

}  // namespace

void greedy_rows(const float* logits, int64_t stride, int R, int V, float* part, int* counters,
                 int32_t* ids, cudaStream_t st) {
  if (R == 0) return;
  // kGreedyBlocks per row for a few rows (latency: one round of loads per thread); with many rows
  // about four blocks per SM in all, each with many rounds of loads in flight, instead of
  // kGreedyBlocks x R short blocks (128 rows: 69.5 us per call, 1.9 TB/s, bench/NOTES-cuda.md run
  // 22).
  static const int sms = [] {
    int dev = 0, n = 0;
    TS_CUDA(cudaGetDevice(&dev));
    TS_CUDA(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  const int nb = std::clamp((4 * sms + R - 1) / R, 1, kGreedyBlocks);  // 8 per SM: the same
  launch(nb < kGreedyBlocks ? greedy_kernel<true> : greedy_kernel<false>, dim3(nb, R), 256, 0, st,
         "greedy sample", logits, stride, V, part, counters, ids);
}

void sample_rows(const float* logits, int64_t stride, int R, int V, const SampleRowDev* rows,
                 const int32_t* penalty_ids, const int32_t* penalty_counts,
                 const int32_t* suppress_ids, float* work, int32_t* ids, float* lp,
                 int32_t* top_ids, float* top_lp, int top_n_max, cudaStream_t st) {
  if (R == 0) return;
  // Blocks per row: a row alone on one SM took ~0.4 ms of a decode step at V = 262,144 (passes
  // over 1 MB and 262,144 double exps, bench/NOTES-cuda.md run 19); as many as the SMs allow,
  // up to a cluster of 16, down to one when the rows fill the GPU.
  static const int sms = [] {
    int dev = 0, n = 0;
    TS_CUDA(cudaGetDevice(&dev));
    TS_CUDA(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  int C = 1;
  while (C < kMaxCluster && static_cast<int64_t>(C) * 2 * R <= sms && sample_cluster_fits(C * 2))
    C *= 2;
  static const bool sized = [] {
    TS_CUDA(cudaFuncSetAttribute(sample_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(kBinBytes)));
    return true;
  }();
  (void)sized;
  launch_clusters(C, true, sample_kernel, dim3(C, R, 1), kThreads, kBinBytes, st, "sampling",
                  logits, stride, V, rows, penalty_ids, penalty_counts, suppress_ids, work, ids, lp,
                  top_ids, top_lp, top_n_max);
}

}  // namespace tessera::cuda
