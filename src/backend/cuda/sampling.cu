// GPU sampler: one 1024-thread block per row, no sort of the vocabulary. top-k finds the k-th
// largest value by a 4-pass radix select on the float bits (8-bit digits, counts); top-p finds
// its threshold the same way with probability-mass histograms; the pick walks kept ids in
// ascending order as a block-wide prefix sum over contiguous id ranges, then one thread walks its
// range. Probabilities are exp(v - max) stored as floats, sums in double, as cpu/sampling.cpp
// computes them, so picks agree except at near-ties.
#include <cfloat>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/sampling.h"
#include "core/rng.h"

namespace tessera::cuda {

namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

struct Shared {
  unsigned int hist[256];
  double hsum[256];
  double red_d[kWarps];
  float red_f[kWarps];
  int red_i[kWarps];
  unsigned int prefix;
  float f;
  double d;
  int winner;
};

__device__ __forceinline__ unsigned int float_key(float v) {
  const unsigned int u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float key_float(unsigned int k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
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

// (value, id) that comes first in (value descending, id ascending); NaN counts as -inf.
__device__ __forceinline__ bool before(float v, int i, float bv, int bi) {
  return bi < 0 || v > bv || (v == bv && i < bi);
}
__device__ void block_argmax(float& v, int& i, Shared& sh) {
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (oi >= 0 && before(ov, oi, v, i)) v = ov, i = oi;
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) {
    sh.red_f[threadIdx.x >> 5] = v;
    sh.red_i[threadIdx.x >> 5] = i;
  }
  __syncthreads();
  v = sh.red_f[threadIdx.x & 31];
  i = sh.red_i[threadIdx.x & 31];
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (oi >= 0 && before(ov, oi, v, i)) v = ov, i = oi;
  }
}

// Argmax over x (lowest id on ties); elements strictly after (pv, pi) in that order only.
__device__ int argmax_after(const float* x, int V, float pv, int pi, float* best_v, Shared& sh) {
  float bv = -INFINITY;
  int bi = -1;
  for (int i = threadIdx.x; i < V; i += kThreads) {
    float v = x[i];
    if (v != v) v = -INFINITY;
    if (pi >= 0 && !(v < pv || (v == pv && i > pi))) continue;
    if (before(v, i, bv, bi)) bv = v, bi = i;
  }
  block_argmax(bv, bi, sh);
  *best_v = bv;
  return bi;
}

// The k-th largest value of x[0, V) (counting duplicates), by radix select on the float keys.
__device__ float kth_largest(const float* x, int V, int k, Shared& sh) {
  unsigned int prefix = 0, mask = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += kThreads) sh.hist[i] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < V; i += kThreads) {
      const unsigned int key = float_key(x[i]);
      if ((key & mask) == prefix) atomicAdd(&sh.hist[(key >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned int cum = 0;
      int d = 255;
      for (; d > 0; --d) {
        if (cum + sh.hist[d] >= static_cast<unsigned int>(k)) break;
        cum += sh.hist[d];
      }
      k -= static_cast<int>(cum);
      sh.prefix = prefix | (static_cast<unsigned int>(d) << shift);
      sh.winner = k;
    }
    __syncthreads();
    prefix = sh.prefix;
    k = sh.winner;
    mask |= 255u << shift;
    __syncthreads();
  }
  return key_float(prefix);
}

// The largest value v among e[0, V) (non-negative) with sum(e >= v) >= target; 0 when no value
// reaches it (keep everything).
__device__ float top_p_threshold(const float* e, int V, double target, Shared& sh) {
  unsigned int prefix = 0, mask = 0;
  double above = 0.0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += kThreads) sh.hsum[i] = 0.0;
    __syncthreads();
    for (int i = threadIdx.x; i < V; i += kThreads) {
      const float v = e[i];
      if (!(v > 0.f)) continue;
      const unsigned int key = __float_as_uint(v);
      if ((key & mask) == prefix)
        atomicAdd(&sh.hsum[(key >> shift) & 255u], static_cast<double>(v));
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int d = 255;
      for (; d >= 0; --d) {
        if (above + sh.hsum[d] >= target) break;
        above += sh.hsum[d];
      }
      sh.winner = d;
      if (d >= 0) sh.prefix = prefix | (static_cast<unsigned int>(d) << shift);
      sh.d = above;
    }
    __syncthreads();
    if (sh.winner < 0) return 0.f;
    prefix = sh.prefix;
    above = sh.d;
    mask |= 255u << shift;
    __syncthreads();
  }
  return __uint_as_float(prefix);
}

__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* __restrict__ logits, int64_t stride, int V,
                  const SampleRowDev* __restrict__ rows, const int32_t* __restrict__ pen_ids,
                  const int32_t* __restrict__ pen_counts, const int32_t* __restrict__ sup_ids,
                  float* __restrict__ work, int32_t* __restrict__ ids, float* __restrict__ lp,
                  int32_t* __restrict__ top_ids, float* __restrict__ top_lp, int top_n_max) {
  pdl_enter();
  __shared__ Shared sh;
  const int r = blockIdx.x, tid = threadIdx.x;
  const SampleRowDev P = rows[r];
  const float* raw = logits + static_cast<int64_t>(r) * stride;
  float* w = P.work_row >= 0 ? work + static_cast<int64_t>(P.work_row) * V : nullptr;
  const float* L = raw;
  if (w) {
    for (int i = tid; i < V; i += kThreads) w[i] = raw[i];
    __syncthreads();
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
    __syncthreads();
    L = w;
  }

  int chosen;
  if (P.temperature <= 0.f) {
    float bv;
    chosen = argmax_after(L, V, 0.f, -1, &bv, sh);
    if (chosen < 0) chosen = 0;
  } else {
    // w exists for every row with a temperature.
    for (int i = tid; i < V; i += kThreads) w[i] = w[i] / P.temperature;
    __syncthreads();
    if (P.top_k > 0 && P.top_k < V) {
      const float kth = kth_largest(w, V, P.top_k, sh);
      for (int i = tid; i < V; i += kThreads)
        if (w[i] < kth) w[i] = -INFINITY;
      __syncthreads();
    }
    float mx = -INFINITY;
    for (int i = tid; i < V; i += kThreads) mx = fmaxf(mx, w[i]);
    mx = block_max_f(mx, sh);
    double total = 0.0;
    for (int i = tid; i < V; i += kThreads) {
      const float v = w[i];
      const float e = v == -INFINITY ? 0.f : static_cast<float>(exp(static_cast<double>(v - mx)));
      w[i] = e;
      total += e;
    }
    total = block_sum_d(total, sh);
    if (P.top_p < 1.0f) {
      const float th = top_p_threshold(w, V, static_cast<double>(P.top_p) * total, sh);
      for (int i = tid; i < V; i += kThreads)
        if (w[i] < th) w[i] = 0.f;
      __syncthreads();
    }
    if (P.min_p > 0.0f) {
      float emax = 0.f;
      for (int i = tid; i < V; i += kThreads) emax = fmaxf(emax, w[i]);
      emax = block_max_f(emax, sh);
      const double cut = static_cast<double>(P.min_p) * emax;
      for (int i = tid; i < V; i += kThreads)
        if (static_cast<double>(w[i]) < cut) w[i] = 0.f;
      __syncthreads();
    }
    // Pick: thread t owns ids [t * chunk, (t + 1) * chunk).
    const int chunk = (V + kThreads - 1) / kThreads;
    const int i0 = min(V, tid * chunk), i1 = min(V, i0 + chunk);
    double local = 0.0;
    int last_kept = -1;
    for (int i = i0; i < i1; ++i)
      if (w[i] > 0.f) local += w[i], last_kept = i;
    // Inclusive scan of `local` over the block (warp scans, then warp totals).
    double incl = local;
    for (int o = 1; o < 32; o <<= 1) {
      const double y = __shfl_up_sync(0xffffffffu, incl, o);
      if ((tid & 31) >= o) incl += y;
    }
    __syncthreads();
    if ((tid & 31) == 31) sh.red_d[tid >> 5] = incl;
    if (tid == 0) sh.winner = kThreads;
    __syncthreads();
    if (tid < 32) {
      double x = sh.red_d[tid];
      for (int o = 1; o < 32; o <<= 1) {
        const double y = __shfl_up_sync(0xffffffffu, x, o);
        if (tid >= o) x += y;
      }
      sh.red_d[tid] = x;  // inclusive totals per warp
    }
    __syncthreads();
    const double warp_before = (tid >> 5) > 0 ? sh.red_d[(tid >> 5) - 1] : 0.0;
    const double kept = sh.red_d[kWarps - 1];
    const double prefix = warp_before + incl - local;
    const double target = sample_uniform(P.seed, P.step) * kept;
    if (local > 0.0 && prefix <= target && target < prefix + local) atomicMin(&sh.winner, tid);
    // The last kept id overall, for a target that rounding puts past the end.
    float lk = static_cast<float>(last_kept);
    lk = block_max_f(lk, sh);
    __syncthreads();
    if (tid == sh.winner) {
      double cum = prefix;
      int pick = last_kept;
      for (int i = i0; i < i1; ++i) {
        if (!(w[i] > 0.f)) continue;
        cum += w[i];
        if (cum > target) {
          pick = i;
          break;
        }
      }
      sh.winner = kThreads + 1 + pick;  // publish the id
    }
    __syncthreads();
    chosen = sh.winner > kThreads ? sh.winner - kThreads - 1 : max(0, static_cast<int>(lk));
  }
  if (tid == 0) ids[r] = chosen;

  if (P.want_logprob || P.top_n > 0) {
    float mx = -INFINITY;
    for (int i = tid; i < V; i += kThreads) mx = fmaxf(mx, raw[i]);
    mx = block_max_f(mx, sh);
    double sum = 0.0;
    for (int i = tid; i < V; i += kThreads) sum += exp(static_cast<double>(raw[i] - mx));
    sum = block_sum_d(sum, sh);
    const float lse = mx + static_cast<float>(log(sum));
    if (tid == 0) lp[r] = raw[chosen] - lse;
    float pv = 0.f;
    int pi = -1;
    for (int k = 0; k < P.top_n; ++k) {
      float bv;
      const int bi = argmax_after(raw, V, pv, pi, &bv, sh);
      if (tid == 0) {
        top_ids[static_cast<int64_t>(r) * top_n_max + k] = bi;
        top_lp[static_cast<int64_t>(r) * top_n_max + k] = bi >= 0 ? raw[bi] - lse : -INFINITY;
      }
      pv = bv;
      pi = bi;
      if (bi < 0) break;
    }
  }
}

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
  auto take = [&](float v, int i) {
    if (v != v) v = -INFINITY;
    if (before(v, i, bv, bi)) bv = v, bi = i;
  };
  int i = i0;
  if (reinterpret_cast<uintptr_t>(row + i0) % 16 == 0) {
#pragma unroll 4
    for (int k = i0 + 4 * tid; k + 3 < i1; k += 4 * 256) {
      const float4 v = __ldcs(reinterpret_cast<const float4*>(row + k));
      take(v.x, k);
      take(v.y, k + 1);
      take(v.z, k + 2);
      take(v.w, k + 3);
    }
    i = i0 + (i1 - i0) / 4 * 4;
  }
  for (int k = i + tid; k < i1; k += 256) take(row[k], k);
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (oi >= 0 && before(ov, oi, bv, bi)) bv = ov, bi = oi;
  }
  if ((tid & 31) == 0) wv[tid >> 5] = bv, wi[tid >> 5] = bi;
  __syncthreads();
  if (tid < 32) {
    bv = tid < 8 ? wv[tid] : -INFINITY;
    bi = tid < 8 ? wi[tid] : -1;
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (oi >= 0 && before(ov, oi, bv, bi)) bv = ov, bi = oi;
    }
    if (tid == 0) {
      part[(static_cast<int64_t>(r) * nb + b) * 2] = bv;
      part[(static_cast<int64_t>(r) * nb + b) * 2 + 1] = __int_as_float(bi);
      __threadfence();
      is_last = atomicAdd(&counters[r], 1) == nb - 1;
    }
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
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (oi >= 0 && before(ov, oi, bv, bi)) bv = ov, bi = oi;
  }
  if (tid == 0) {
    ids[r] = bi < 0 ? 0 : bi;
    counters[r] = 0;
  }
}

}  // namespace

void greedy_rows(const float* logits, int64_t stride, int R, int V, float* part, int* counters,
                 int32_t* ids, cudaStream_t st) {
  if (R == 0) return;
  launch(greedy_kernel, dim3(kGreedyBlocks, R), 256, 0, st, "greedy sample", logits, stride, V,
         part, counters, ids);
}

void sample_rows(const float* logits, int64_t stride, int R, int V, const SampleRowDev* rows,
                 const int32_t* penalty_ids, const int32_t* penalty_counts,
                 const int32_t* suppress_ids, float* work, int32_t* ids, float* lp,
                 int32_t* top_ids, float* top_lp, int top_n_max, cudaStream_t st) {
  if (R == 0) return;
  launch(sample_kernel, R, kThreads, 0, st, "sampling", logits, stride, V, rows, penalty_ids,
         penalty_counts, suppress_ids, work, ids, lp, top_ids, top_lp, top_n_max);
  TS_CUDA_LAUNCH("sample");
}

}  // namespace tessera::cuda
