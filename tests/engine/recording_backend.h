// A ComputeBackend that forwards every call to another one and records the calls that order a
// pipelined scheduler step (upload, sample_async, sample_wait, sample), so that tests can check
// when the host waits for ids relative to the forward that consumes them.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace tessera::testing {

class RecordingBackend final : public ComputeBackend {
 public:
  explicit RecordingBackend(std::unique_ptr<ComputeBackend> inner) : in_(std::move(inner)) {}

  // "upload:N" (N tokens taken from the device), "async", "wait", "sample".
  std::vector<std::string> log() const {
    std::lock_guard<std::mutex> lk(mu_);
    return log_;
  }

  Device device() const override { return in_->device(); }
  std::string name() const override { return in_->name(); }
  DType act_dtype() const override { return in_->act_dtype(); }
  std::unique_ptr<DeviceBuffer> alloc(size_t bytes, const char* what) override {
    return in_->alloc(bytes, what);
  }
  void copy_to_device(void* dst, const void* src, size_t bytes) override {
    in_->copy_to_device(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    in_->copy_to_host(dst, src, bytes);
  }
  void synchronize() override { in_->synchronize(); }
  size_t device_free_bytes() override { return in_->device_free_bytes(); }
  std::unique_ptr<Weight> upload_weight(std::span<const TensorInfo* const> parts, DType dtype,
                                        const std::string& what) override {
    return in_->upload_weight(parts, dtype, what);
  }
  void scratch_reset() override { in_->scratch_reset(); }
  Tensor scratch(int64_t rows, int64_t cols, DType dt) override {
    return in_->scratch(rows, cols, dt);
  }
  BatchView upload(const HostBatch& b) override {
    record("upload:" + std::to_string(b.sampled.size()));
    return in_->upload(b);
  }
  void run_forward(const BatchView& b, const std::function<void()>& ops) override {
    in_->run_forward(b, ops);
  }
  void embed(const Weight& table, const int32_t* ids, int n, float scale, bool round,
             Tensor out) override {
    in_->embed(table, ids, n, scale, round, out);
  }
  void rms_norm(Tensor x, Tensor w, float eps, Tensor out) override {
    in_->rms_norm(x, w, eps, out);
  }
  void add_rms_norm(Tensor residual, Tensor y, const Tensor* w_y, const Tensor* w_out, float eps,
                    Tensor out) override {
    in_->add_rms_norm(residual, y, w_y, w_out, eps, out);
  }
  void linear(Tensor x, const Weight& w, const Tensor* bias, Tensor out) override {
    in_->linear(x, w, bias, out);
  }
  void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* q_norm, const Tensor* k_norm,
                    float eps, const int32_t* positions, Tensor inv_freq) override {
    in_->qk_norm_rope(qkv, nh, nkv, hd, q_norm, k_norm, eps, positions, inv_freq);
  }
  void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                const int32_t* slot_mapping) override {
    in_->kv_store(qkv, nh, nkv, hd, kv, slot_mapping);
  }
  void attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv, const BatchView& b,
                 int group, float scale, int window, float softcap, Tensor out) override {
    in_->attention(qkv, nh, nkv, hd, kv, b, group, scale, window, softcap, out);
  }
  void gated_act(Tensor gate_up, Activation act, Tensor out) override {
    in_->gated_act(gate_up, act, out);
  }
  void linear_gated(Tensor x, const Weight& w, const Tensor* bias, Activation act, Tensor gate_up,
                    Tensor out) override {
    in_->linear_gated(x, w, bias, act, gate_up, out);
  }
  void gather_rows(Tensor x, const int32_t* rows, int n, Tensor out) override {
    in_->gather_rows(x, rows, n, out);
  }
  void softcap(Tensor x, float cap) override { in_->softcap(x, cap); }
  void sample(Tensor logits, const SampleBatch& batch, SampleOutput& out) override {
    record("sample");
    in_->sample(logits, batch, out);
  }
  void sample_async(Tensor logits, const SampleBatch& batch) override {
    record("async");
    in_->sample_async(logits, batch);
  }
  void sample_wait(SampleOutput& out) override {
    record("wait");
    in_->sample_wait(out);
  }

 private:
  void record(std::string e) {
    std::lock_guard<std::mutex> lk(mu_);
    log_.push_back(std::move(e));
  }
  std::unique_ptr<ComputeBackend> in_;
  mutable std::mutex mu_;
  std::vector<std::string> log_;
};

}  // namespace tessera::testing
