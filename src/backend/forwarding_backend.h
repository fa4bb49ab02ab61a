// A ComputeBackend that hands every call to another one: the base of wrappers that time or record
// some calls (the CPU benchmark's TimingBackend, the tests' RecordingBackend) and override only
// those. Forwarding sample_async / sample_wait as well keeps HostBatch::sampled working: the
// inner backend's upload takes ids from its own last sample.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "backend/backend.h"

namespace tessera {

class ForwardingBackend : public ComputeBackend {
 public:
  explicit ForwardingBackend(std::unique_ptr<ComputeBackend> inner) : in_(std::move(inner)) {}
  ComputeBackend& inner() const { return *in_; }

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
  std::unique_ptr<Weight> upload_weight(std::span<const HostTensor* const> parts, DType dtype,
                                        const std::string& what) override {
    return in_->upload_weight(parts, dtype, what);
  }
  std::unique_ptr<Weight> upload_quantized(std::span<const HostQuantTensor* const> parts,
                                           DType dtype, const std::string& what) override {
    return in_->upload_quantized(parts, dtype, what);
  }
  void scratch_reset() override { in_->scratch_reset(); }
  Tensor scratch(int64_t r, int64_t c, DType dt) override { return in_->scratch(r, c, dt); }
  BatchView upload(const HostBatch& b) override { return in_->upload(b); }
  void run_forward(const BatchView& b, const std::function<void()>& ops) override {
    in_->run_forward(b, ops);
  }

  void embed(const Weight& t, const int32_t* ids, int n, float s, bool r, Tensor out) override {
    in_->embed(t, ids, n, s, r, out);
  }
  void rms_norm(Tensor x, Tensor w, float eps, Tensor out) override {
    in_->rms_norm(x, w, eps, out);
  }
  void add_rms_norm(Tensor res, Tensor y, const Tensor* wy, const Tensor* wo, float eps,
                    Tensor out) override {
    in_->add_rms_norm(res, y, wy, wo, eps, out);
  }
  void linear(Tensor x, const Weight& w, const Tensor* bias, Tensor out) override {
    in_->linear(x, w, bias, out);
  }
  void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* qn, const Tensor* kn,
                    float eps, const int32_t* pos, Tensor inv) override {
    in_->qk_norm_rope(qkv, nh, nkv, hd, qn, kn, eps, pos, inv);
  }
  void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                const int32_t* slots) override {
    in_->kv_store(qkv, nh, nkv, hd, kv, slots);
  }
  void attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv, const BatchView& b,
                 int g, float scale, int window, float cap, Tensor out) override {
    in_->attention(qkv, nh, nkv, hd, kv, b, g, scale, window, cap, out);
  }
  void gated_act(Tensor gu, Activation act, Tensor out) override { in_->gated_act(gu, act, out); }
  void linear_gated(Tensor x, const Weight& w, const Tensor* bias, Activation act, Tensor gu,
                    Tensor out) override {
    in_->linear_gated(x, w, bias, act, gu, out);
  }
  void gather_rows(Tensor x, const int32_t* rows, int n, Tensor out) override {
    in_->gather_rows(x, rows, n, out);
  }
  void softcap(Tensor x, float cap) override { in_->softcap(x, cap); }
  void scale(Tensor x, float s) override { in_->scale(x, s); }
  void act_mul(Tensor g, Tensor u, Activation act, Tensor out) override {
    in_->act_mul(g, u, act, out);
  }
  void moe_route(Tensor scores, int k, const Tensor* pes, Tensor w, Tensor ids) override {
    in_->moe_route(scores, k, pes, w, ids);
  }
  void moe_experts(Tensor x, std::span<const Weight* const> gu, std::span<const Weight* const> dn,
                   Activation act, Tensor w, Tensor ids, Tensor out) override {
    in_->moe_experts(x, gu, dn, act, w, ids, out);
  }
  void argmax_rows(Tensor logits, int32_t* ids) override { in_->argmax_rows(logits, ids); }
  void norm_linear(const ResidualNorm& n, const Weight& w, const Tensor* bias,
                   Tensor out) override {
    in_->norm_linear(n, w, bias, out);
  }
  void norm_linear_gated(const ResidualNorm& n, const Weight& w, Activation act, Tensor gu,
                         Tensor out) override {
    in_->norm_linear_gated(n, w, act, gu, out);
  }
  void norm_lm_head(const ResidualNorm& n, const Weight& w, float cap, Tensor logits,
                    int32_t* ids) override {
    in_->norm_lm_head(n, w, cap, logits, ids);
  }
  void rope_store_attention(Tensor qkv, const AttentionLayer& l, const KvLayerView& kv,
                            const BatchView& b, Tensor out) override {
    in_->rope_store_attention(qkv, l, kv, b, out);
  }
  void linear_prefetch(Tensor x, const Weight& w, const Tensor* bias, Tensor out,
                       const Weight& next) override {
    in_->linear_prefetch(x, w, bias, out, next);
  }
  void sample(Tensor logits, const SampleBatch& b, SampleOutput& out) override {
    in_->sample(logits, b, out);
  }
  void sample_async(Tensor logits, const SampleBatch& b, const int32_t* ids = nullptr) override {
    in_->sample_async(logits, b, ids);
  }
  void sample_wait(SampleOutput& out) override { in_->sample_wait(out); }
  void mask_logits(Tensor logits, std::span<const LogitMask> m) override {
    in_->mask_logits(logits, m);
  }

 private:
  std::unique_ptr<ComputeBackend> in_;
};

}  // namespace tessera
