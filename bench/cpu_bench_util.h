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
class TimingBackend final : public ComputeBackend {
 public:
  explicit TimingBackend(std::unique_ptr<ComputeBackend> inner) : in_(std::move(inner)) {}
  std::map<std::string, double> totals;  // seconds per op key
  std::map<std::string, int64_t> counts;
  bool enabled = false;

  Device device() const override { return in_->device(); }
  std::string name() const override { return in_->name(); }
  DType act_dtype() const override { return in_->act_dtype(); }
  std::unique_ptr<DeviceBuffer> alloc(size_t bytes, const char* what) override {
    return in_->alloc(bytes, what);
  }
  void copy_to_device(void* d, const void* s, size_t n) override { in_->copy_to_device(d, s, n); }
  void copy_to_host(void* d, const void* s, size_t n) override { in_->copy_to_host(d, s, n); }
  void synchronize() override { in_->synchronize(); }
  size_t device_free_bytes() override { return in_->device_free_bytes(); }
  std::unique_ptr<Weight> upload_weight(std::span<const TensorInfo* const> parts, DType dtype,
                                        const std::string& what) override {
    return in_->upload_weight(parts, dtype, what);
  }
  void scratch_reset() override { in_->scratch_reset(); }
  Tensor scratch(int64_t r, int64_t c, DType dt) override { return in_->scratch(r, c, dt); }
  BatchView upload(const HostBatch& b) override { return in_->upload(b); }

  void embed(const Weight& t, const int32_t* ids, int n, float s, bool r, Tensor out) override {
    timed("embed", [&] { in_->embed(t, ids, n, s, r, out); });
  }
  void rms_norm(Tensor x, Tensor w, float eps, Tensor out) override {
    timed("rms_norm", [&] { in_->rms_norm(x, w, eps, out); });
  }
  void add_rms_norm(Tensor res, Tensor y, const Tensor* wy, const Tensor* wo, float eps,
                    Tensor out) override {
    timed("add_rms_norm", [&] { in_->add_rms_norm(res, y, wy, wo, eps, out); });
  }
  void linear(Tensor x, const Weight& w, const Tensor* bias, Tensor out) override {
    timed("linear " + std::to_string(w.rows) + "x" + std::to_string(w.cols),
          [&] { in_->linear(x, w, bias, out); });
  }
  void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* qn, const Tensor* kn,
                    float eps, const int32_t* pos, Tensor inv) override {
    timed("qk_norm_rope", [&] { in_->qk_norm_rope(qkv, nh, nkv, hd, qn, kn, eps, pos, inv); });
  }
  void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                const int32_t* slots) override {
    timed("kv_store", [&] { in_->kv_store(qkv, nh, nkv, hd, kv, slots); });
  }
  void attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv, const BatchView& b,
                 int g, float scale, int window, float cap, Tensor out) override {
    timed(window > 0 ? "attention (sliding)" : "attention (global)",
          [&] { in_->attention(qkv, nh, nkv, hd, kv, b, g, scale, window, cap, out); });
  }
  void linear_gated(Tensor x, const Weight& w, const Tensor* bias, Activation act, Tensor gu,
                    Tensor out) override {
    timed("linear_gated " + std::to_string(w.rows) + "x" + std::to_string(w.cols),
          [&] { in_->linear_gated(x, w, bias, act, gu, out); });
  }
  void gated_act(Tensor gu, Activation act, Tensor out) override {
    timed("gated_act", [&] { in_->gated_act(gu, act, out); });
  }
  void gather_rows(Tensor x, const int32_t* rows, int n, Tensor out) override {
    timed("gather_rows", [&] { in_->gather_rows(x, rows, n, out); });
  }
  void softcap(Tensor x, float cap) override {
    timed("softcap", [&] { in_->softcap(x, cap); });
  }
  void sample(Tensor logits, const SampleBatch& b, SampleOutput& out) override {
    timed("sample", [&] { in_->sample(logits, b, out); });
  }

 private:
  template <class F>
  void timed(const std::string& key, F f) {
    if (!enabled) return f();
    const double t0 = now_s();
    f();
    in_->synchronize();
    totals[key] += now_s() - t0;
    counts[key] += 1;
  }
  std::unique_ptr<ComputeBackend> in_;
};

// Op micro-benchmarks on the Gemma-3-1B shapes (cpu_bench_ops.cpp); `only` names one group
// (pool, small, attention, gemv, rows, kernel) or is empty for all.
void run_op_benchmarks(int reps, const std::string& only);

}  // namespace tessera::bench
