// The sampler chain on the CPU; the semantics every backend follows are in backend.h
// (SampleParams). One row per thread range.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/simd_kernels.h"
#include "core/rng.h"
#include "core/thread_pool.h"

namespace tessera::cpu {

namespace {

// log_softmax of the raw row: the chosen token's value and the top-n (most likely first,
// lowest id on ties).
void raw_logprobs(const float* row, int64_t V, int32_t chosen, int n, float* chosen_lp,
                  int32_t* top_ids, float* top_lp) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < V; ++i) mx = std::max(mx, row[i]);
  double sum = 0;
  for (int64_t i = 0; i < V; ++i) sum += std::exp(static_cast<double>(row[i] - mx));
  const float lse = mx + static_cast<float>(std::log(sum));
  if (chosen_lp) *chosen_lp = row[chosen] - lse;
  if (n <= 0) return;
  std::vector<int32_t> idx(static_cast<size_t>(V));
  std::iota(idx.begin(), idx.end(), 0);
  auto better = [&](int32_t a, int32_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  };
  std::partial_sort(idx.begin(), idx.begin() + std::min<int64_t>(n, V), idx.end(), better);
  for (int k = 0; k < n; ++k) {
    if (k < V) {
      top_ids[k] = idx[k];
      top_lp[k] = row[idx[k]] - lse;
    } else {
      top_ids[k] = -1;
      top_lp[k] = -std::numeric_limits<float>::infinity();
    }
  }
}

// The first maximum (lowest id on ties).
int32_t argmax(const float* l, int64_t V) {
  switch (active_isa()) {
    case Isa::avx512:
      return static_cast<int32_t>(avx512::argmax(l, V));
    case Isa::avx2:
      return static_cast<int32_t>(avx2::argmax(l, V));
    default:
      break;
  }
  int64_t best = 0;
  for (int64_t i = 1; i < V; ++i)
    if (l[i] > l[best]) best = i;
  return static_cast<int32_t>(best);
}

int32_t pick(std::vector<float>& l, const SampleParams& p) {
  const int64_t V = static_cast<int64_t>(l.size());
  const float ninf = -std::numeric_limits<float>::infinity();
  if (p.temperature <= 0.0f) return argmax(l.data(), V);
  for (float& x : l) x /= p.temperature;
  if (p.top_k > 0 && p.top_k < V) {
    std::vector<float> tmp(l);
    std::nth_element(tmp.begin(), tmp.begin() + (p.top_k - 1), tmp.end(), std::greater<float>());
    const float kth = tmp[p.top_k - 1];
    for (float& x : l)
      if (x < kth) x = ninf;
  }
  // Probabilities of what is left.
  float mx = ninf;
  for (float x : l) mx = std::max(mx, x);
  std::vector<double> pr(static_cast<size_t>(V));
  double total = 0;
  for (int64_t i = 0; i < V; ++i) {
    pr[i] = l[i] == ninf ? 0.0 : std::exp(static_cast<double>(l[i] - mx));
    total += pr[i];
  }
  for (double& x : pr) x /= total;
  if (p.top_p < 1.0f) {
    // Keep the tokens with p >= p*, where p* is the largest value whose set reaches top_p.
    std::vector<double> sorted;
    sorted.reserve(static_cast<size_t>(V));
    for (double x : pr)
      if (x > 0) sorted.push_back(x);
    std::sort(sorted.begin(), sorted.end(), std::greater<double>());
    double cum = 0, thresh = sorted.empty() ? 0 : sorted.back();
    for (double x : sorted) {
      cum += x;
      if (cum >= p.top_p) {
        thresh = x;
        break;
      }
    }
    for (double& x : pr)
      if (x < thresh) x = 0;
  }
  if (p.min_p > 0.0f) {
    double pmax = *std::max_element(pr.begin(), pr.end());
    for (double& x : pr)
      if (x < p.min_p * pmax) x = 0;
  }
  double kept = 0;
  for (double x : pr) kept += x;
  const double target = sample_uniform(p.seed, p.step) * kept;
  double cum = 0;
  int64_t last = -1;
  for (int64_t i = 0; i < V; ++i) {
    if (pr[i] <= 0) continue;
    cum += pr[i];
    last = i;
    if (cum > target) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last >= 0 ? last : 0);
}

}  // namespace

void sample(Tensor logits, const SampleBatch& batch, SampleOutput& out) {
  const int64_t R = logits.rows, V = logits.cols;
  int top_n = 0;
  bool any_lp = false;
  for (const auto& p : batch.rows) {
    top_n = std::max(top_n, p.top_logprobs);
    any_lp |= p.logprobs || p.top_logprobs > 0;
  }
  out.ids.assign(static_cast<size_t>(R), 0);
  out.top_n = top_n;
  out.logprobs.assign(any_lp ? static_cast<size_t>(R) : 0, 0.0f);
  out.top_ids.assign(static_cast<size_t>(R * top_n), -1);
  out.top_logprobs.assign(static_cast<size_t>(R * top_n), -std::numeric_limits<float>::infinity());
  ThreadPool::global().parallel_for(R, [&](int64_t r0, int64_t r1, int) {
    std::vector<float> l;
    for (int64_t r = r0; r < r1; ++r) {
      const SampleParams& p = batch.rows[r];
      const float* raw = logits.ptr<const float>() + r * logits.stride;
      if (p.temperature <= 0.0f && p.rep_count == 0 && p.freq_count == 0 && p.suppress_count == 0) {
        // Plain greedy: argmax of the raw row, no copy.
        const int32_t id = argmax(raw, V);
        out.ids[r] = id;
        if (p.logprobs || p.top_logprobs > 0)
          raw_logprobs(raw, V, id, p.top_logprobs, &out.logprobs[r], out.top_ids.data() + r * top_n,
                       out.top_logprobs.data() + r * top_n);
        continue;
      }
      l.assign(raw, raw + V);
      for (int i = 0; i < p.rep_count; ++i) {
        float& x = l[batch.penalty_ids[p.rep_begin + i]];
        x = x > 0 ? x / p.repetition_penalty : x * p.repetition_penalty;
      }
      for (int i = 0; i < p.freq_count; ++i) {
        float& x = l[batch.penalty_ids[p.freq_begin + i]];
        x -= p.presence_penalty +
             p.frequency_penalty * static_cast<float>(batch.penalty_counts[p.freq_begin + i]);
      }
      for (int i = 0; i < p.suppress_count; ++i)
        l[batch.suppress_ids[p.suppress_begin + i]] = -std::numeric_limits<float>::infinity();
      const int32_t id = pick(l, p);
      out.ids[r] = id;
      if (p.logprobs || p.top_logprobs > 0)
        raw_logprobs(raw, V, id, p.top_logprobs, &out.logprobs[r], out.top_ids.data() + r * top_n,
                     out.top_logprobs.data() + r * top_n);
    }
  });
}

void argmax_rows(Tensor logits, int32_t* ids) {
  for (int64_t r = 0; r < logits.rows; ++r)
    ids[r] = argmax(logits.ptr<const float>() + r * logits.stride, logits.cols);
}

}  // namespace tessera::cpu
