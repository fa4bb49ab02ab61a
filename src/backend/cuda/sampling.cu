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
#include <algorithm>

#include "backend/cuda/sampling_row.cuh"

namespace tessera::cuda {

namespace {

// grid (C, R), clusters of C along x: row r = blockIdx.y.
// One kernel of ~260 lines: the chain's steps (penalties, temperature, top-k, top-p, min-p, the
// pick, the logprobs) run in order on one row held by one cluster, each step reading what the
// previous left in the cluster's shared memory and registers; split into kernels they would pass
// the row through global memory between launches.
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

// Whether clusters of `n` sampling blocks can run on this GPU.
bool sample_cluster_fits(int n) {
  return n <= 1 || (n <= kMaxCluster && cluster_fits(reinterpret_cast<const void*>(sample_kernel),
                                                     n, kThreads, kBinBytes));
}

}  // namespace

void sample_rows(const float* logits, int64_t stride, int R, int V, const SampleRowDev* rows,
                 const int32_t* penalty_ids, const int32_t* penalty_counts,
                 const int32_t* suppress_ids, float* work, int32_t* ids, float* lp,
                 int32_t* top_ids, float* top_lp, int top_n_max, cudaStream_t st) {
  if (R == 0) return;
  // Blocks per row: a row alone on one SM is a large part of a decode step at V = 262,144 (passes
  // over 1 MB and 262,144 double exps); as many as the SMs allow, up to a cluster of 16, down to
  // one when the rows fill the GPU.
  static const int sms = sampler_sms();
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
