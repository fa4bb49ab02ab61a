// Shared helpers of the CPU benchmark (tessera_cpu_bench): timing, random host data, and the
// op-timing backend wrapper used to show where decode time goes.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/forwarding_backend.h"

namespace tessera::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds this process has used (all threads, user + system).
double process_cpu_s();

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Median seconds of `reps` runs of f after one warm-up run.
inline double time_median(int reps, const std::function<void()>& f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double t0 = now_s();
    f();
    t.push_back(now_s() - t0);
  }
  return median(t);
}

// Deterministic values in [-1, 1).
void fill_random(float* p, int64_t n, uint64_t seed);
void fill_random_bf16(uint16_t* p, int64_t n, uint64_t seed);

// A ComputeBackend that forwards to another and adds up the wall time of every op (each op is
// followed by synchronize(), which the CPU backend makes free). Linear ops are keyed by weight
// shape ("linear 262144x1152").
class TimingBackend final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  std::map<std::string, double> totals;  // seconds per op key
  std::map<std::string, int64_t> counts;
  bool enabled = false;

  void embed(const Weight& t, const int32_t* ids, int n, float s, bool r, Tensor out) override {
    timed("embed", [&] { inner().embed(t, ids, n, s, r, out); });
  }
  void rms_norm(Tensor x, Tensor w, float eps, Tensor out) override {
    timed("rms_norm", [&] { inner().rms_norm(x, w, eps, out); });
  }
  void add_rms_norm(Tensor res, Tensor y, const Tensor* wy, const Tensor* wo, float eps,
                    Tensor out) override {
    timed("add_rms_norm", [&] { inner().add_rms_norm(res, y, wy, wo, eps, out); });
  }
  void linear(Tensor x, const Weight& w, const Tensor* bias, Tensor out) override {
    timed("linear " + std::to_string(w.rows) + "x" + std::to_string(w.cols),
          [&] { inner().linear(x, w, bias, out); });
  }
  void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* qn, const Tensor* kn,
                    float eps, const int32_t* pos, Tensor inv) override {
    timed("qk_norm_rope", [&] { inner().qk_norm_rope(qkv, nh, nkv, hd, qn, kn, eps, pos, inv); });
  }
  void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                const int32_t* slots) override {
    timed("kv_store", [&] { inner().kv_store(qkv, nh, nkv, hd, kv, slots); });
  }
  void attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv, const BatchView& b,
                 int g, float scale, int window, float cap, Tensor out) override {
    timed(window > 0 ? "attention (sliding)" : "attention (global)",
          [&] { inner().attention(qkv, nh, nkv, hd, kv, b, g, scale, window, cap, out); });
  }
  void linear_gated(Tensor x, const Weight& w, const Tensor* bias, Activation act, Tensor gu,
                    Tensor out) override {
    timed("linear_gated " + std::to_string(w.rows) + "x" + std::to_string(w.cols),
          [&] { inner().linear_gated(x, w, bias, act, gu, out); });
  }
  void gated_act(Tensor gu, Activation act, Tensor out) override {
    timed("gated_act", [&] { inner().gated_act(gu, act, out); });
  }
  void gather_rows(Tensor x, const int32_t* rows, int n, Tensor out) override {
    timed("gather_rows", [&] { inner().gather_rows(x, rows, n, out); });
  }
  void softcap(Tensor x, float cap) override {
    timed("softcap", [&] { inner().softcap(x, cap); });
  }
  void sample(Tensor logits, const SampleBatch& b, SampleOutput& out) override {
    timed("sample", [&] { inner().sample(logits, b, out); });
  }
  // The fused ops as their compositions through this wrapper, so that each plain op is timed
  // (the CPU backend runs the same compositions).
  void norm_linear(const ResidualNorm& n, const Weight& w, const Tensor* bias,
                   Tensor out) override {
    ComputeBackend::norm_linear(n, w, bias, out);
  }
  void norm_linear_gated(const ResidualNorm& n, const Weight& w, Activation act, Tensor gu,
                         Tensor out) override {
    ComputeBackend::norm_linear_gated(n, w, act, gu, out);
  }
  void norm_lm_head(const ResidualNorm& n, const Weight& w, float cap, Tensor logits,
                    int32_t* ids) override {
    ComputeBackend::norm_lm_head(n, w, cap, logits, ids);
  }
  void rope_store_attention(Tensor qkv, const AttentionLayer& l, const KvLayerView& kv,
                            const BatchView& b, Tensor out) override {
    ComputeBackend::rope_store_attention(qkv, l, kv, b, out);
  }
  void linear_prefetch(Tensor x, const Weight& w, const Tensor* bias, Tensor out,
                       const Weight& next) override {
    ComputeBackend::linear_prefetch(x, w, bias, out, next);
  }
  void argmax_rows(Tensor logits, int32_t* ids) override {
    timed("argmax_rows", [&] { inner().argmax_rows(logits, ids); });
  }

 private:
  template <class F>
  void timed(const std::string& key, F f) {
    if (!enabled) return f();
    const double t0 = now_s();
    f();
    inner().synchronize();
    totals[key] += now_s() - t0;
    counts[key] += 1;
  }
};

// Op micro-benchmarks on the Gemma-3-1B shapes (cpu_bench_ops.cpp); `only` names one group
// (pool, small, attention, gemv, rows, kernel) or is empty for all.
void run_op_benchmarks(int reps, const std::string& only);

}  // namespace tessera::bench
