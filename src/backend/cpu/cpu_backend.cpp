// The CPU backend: host memory counted by the CPU tracker, weights copied out of the mmapped
// safetensors into f32 or bf16 rows (fusing q/k/v and gate/up), ops in cpu/*.cpp.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/quant_weight.h"
#include "core/check.h"
#include "core/thread_pool.h"

namespace tessera {
namespace {

class HostDeviceBuffer final : public DeviceBuffer {
 public:
  HostDeviceBuffer(size_t bytes, const char* what) : buf_(bytes, what) {}
  void* data() const override { return buf_.data(); }
  size_t size() const override { return buf_.size(); }

 private:
  HostBuffer buf_;
};

class CpuBackend final : public ComputeBackend {
 public:
  Device device() const override { return Device::cpu; }
  std::string name() const override {
    return std::string("cpu (") + cpu::isa_name(cpu::active_isa()) + ")";
  }
  DType act_dtype() const override { return DType::f32; }

  std::unique_ptr<DeviceBuffer> alloc(size_t bytes, const char* what) override {
    return std::make_unique<HostDeviceBuffer>(bytes, what);
  }
  void copy_to_device(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void synchronize() override {}

  // Packs the parts (stacked along dim 0) into the CPU panel layout (cpu_kernels.h, CpuWeight),
  // converting to `dtype`; the mmapped checkpoint is read once.
  std::unique_ptr<Weight> upload_weight(std::span<const HostTensor* const> parts, DType dtype,
                                        const std::string& what) override {
    TS_ASSERT(!parts.empty());
    TS_ASSERT(dtype == DType::f32 || dtype == DType::bf16);
    auto w = std::make_unique<cpu::CpuWeight>();
    w->cols = parts[0]->shape.size() == 2 ? parts[0]->shape[1] : 1;
    for (const HostTensor* p : parts) {
      TS_ASSERT(p->shape.size() == 2 && p->shape[1] == w->cols);
      w->rows += p->shape[0];
    }
    w->dtype = dtype;
    cpu::alloc_panels(*w, what.c_str());
    int64_t row = 0;
    for (const HostTensor* p : parts) {
      cpu::pack_rows(*w, row, p->shape[0], p->data, p->dtype);
      row += p->shape[0];
    }
    return w;
  }

  // Repacks MLX's packed rows into the CPU's quantized panels (quant_weight.h).
  std::unique_ptr<Weight> upload_quantized(std::span<const HostQuantTensor* const> parts,
                                           DType dtype, const std::string& what) override {
    return cpu::pack_quantized(parts, dtype, what);
  }

  void scratch_reset() override {
    if (chunks_.size() > 1 || (chunks_.size() == 1 && high_water_ > chunks_[0].size())) {
      chunks_.clear();
      chunks_.emplace_back(high_water_, "cpu activations");
    }
    used_ = 0;
    chunk_used_ = 0;
  }

  Tensor scratch(int64_t rows, int64_t cols, DType dt) override {
    size_t bytes = (static_cast<size_t>(rows * cols) * dtype_size(dt) + 63) / 64 * 64;
    if (chunks_.empty() || chunk_used_ + bytes > chunks_.back().size()) {
      chunks_.emplace_back(std::max<size_t>(bytes, 1 << 20), "cpu activations");
      chunk_used_ = 0;
    }
    void* p = chunks_.back().as<char>() + chunk_used_;
    chunk_used_ += bytes;
    used_ += bytes;
    high_water_ = std::max(high_water_, used_);
    return Tensor{p, dt, rows, cols, cols};
  }

  BatchView upload(const HostBatch& b) override {
    BatchView v;
    v.num_tokens = b.num_tokens();
    v.num_seqs = b.num_seqs();
    v.tokens = b.tokens.data();
    if (!b.sampled.empty()) {  // ids of the last sample_async (already on the host here)
      check_sampled(b, async_out_.ids.size());
      tokens_ = b.tokens;
      for (const HostBatch::Sampled& e : b.sampled) tokens_[e.token] = async_out_.ids[e.row];
      v.tokens = tokens_.data();
    }
    v.positions = b.positions.data();
    v.token_seq = b.token_seq.data();
    v.seq_q_start = b.seq_q_start.data();
    v.seq_q_len = b.seq_q_len.data();
    v.seq_kv_len = b.seq_kv_len.data();
    for (int s = 0; s < v.num_seqs; ++s) {
      v.max_q_len = std::max(v.max_q_len, b.seq_q_len[s]);
      v.max_kv_len = std::max(v.max_kv_len, b.seq_kv_len[s]);
    }
    TS_ASSERT(b.groups.size() <= static_cast<size_t>(kMaxKvGroups));
    v.num_groups = static_cast<int>(b.groups.size());
    for (size_t g = 0; g < b.groups.size(); ++g) {
      v.groups[g].block_table = b.groups[g].block_table.data();
      v.groups[g].slot_mapping = b.groups[g].slot_mapping.data();
      v.groups[g].max_blocks = b.groups[g].max_blocks;
    }
    v.logit_rows = b.logit_rows.data();
    v.num_logit_rows = static_cast<int>(b.logit_rows.size());
    v.logit_rows_all = b.logits_every_row();
    v.greedy_ids = b.greedy_ids;
    v.hidden_states = b.hidden_states;
    v.causal = b.causal;
    return v;
  }

  void embed(const Weight& table, const int32_t* ids, int n, float scale, bool round,
             Tensor out) override {
    if (table.quant.quantized()) {
      cpu::embed_quant(static_cast<const cpu::CpuQuantWeight&>(table), ids, n, scale, round, out);
    } else {
      cpu::embed(static_cast<const cpu::CpuWeight&>(table), ids, n, scale, round, out);
    }
  }
  void rms_norm(Tensor x, Tensor w, float eps, Tensor out) override {
    cpu::rms_norm(x, w, eps, out);
  }
  void add_rms_norm(Tensor residual, Tensor y, const Tensor* w_y, const Tensor* w_out, float eps,
                    Tensor out) override {
    cpu::add_rms_norm(residual, y, w_y, w_out, eps, out);
  }
  void linear(Tensor x, const Weight& w, const Tensor* bias, Tensor out) override {
    if (linear_parts(x, w, bias, out)) return;
    if (w.quant.quantized()) {
      cpu::linear_quant(x, static_cast<const cpu::CpuQuantWeight&>(w), bias, out);
    } else {
      cpu::linear(x, static_cast<const cpu::CpuWeight&>(w), bias, out);
    }
  }
  void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* q_norm, const Tensor* k_norm,
                    float eps, const int32_t* positions, Tensor inv_freq) override {
    cpu::qk_norm_rope(qkv, nh, nkv, hd, q_norm, k_norm, eps, positions, inv_freq);
  }
  void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                const int32_t* slot_mapping) override {
    cpu::kv_store(qkv, nh, nkv, hd, kv, slot_mapping);
  }
  void attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv, const BatchView& b,
                 int group, float scale, int window, float softcap, Tensor out) override {
    cpu::attention(qkv, nh, nkv, hd, kv, b, group, scale, window, softcap, out);
  }
  void gated_act(Tensor gate_up, Activation act, Tensor out) override {
    cpu::gated_act(gate_up, act, out);
  }
  void linear_gated(Tensor x, const Weight& w, const Tensor* bias, Activation act, Tensor gate_up,
                    Tensor out) override {
    // One pass where the panel kernel takes the shape (equal to the two ops bit for bit; +1.9% on
    // prefill, bench/NOTES-cpu.md), else the two ops.
    const bool fused =
        !w.parts.empty() ? false
        : w.quant.quantized()
            ? cpu::linear_gated_quant(x, static_cast<const cpu::CpuQuantWeight&>(w), bias, act, out)
            : cpu::linear_gated(x, static_cast<const cpu::CpuWeight&>(w), bias, act, out);
    if (!fused) ComputeBackend::linear_gated(x, w, bias, act, gate_up, out);
  }
  void gather_rows(Tensor x, const int32_t* rows, int n, Tensor out) override {
    for (int r = 0; r < n; ++r)
      std::memcpy(static_cast<char*>(out.data) + r * out.row_bytes(),
                  static_cast<const char*>(x.data) + rows[r] * x.row_bytes(),
                  static_cast<size_t>(x.cols) * dtype_size(x.dtype));
  }
  void softcap(Tensor x, float cap) override { cpu::softcap(x, cap); }
  void argmax_rows(Tensor logits, int32_t* ids) override { cpu::argmax_rows(logits, ids); }
  void sample(Tensor logits, const SampleBatch& batch, SampleOutput& out) override {
    cpu::sample(logits, batch, out);
  }
  // In place: the logits are host memory here.
  void mask_logits(Tensor logits, std::span<const LogitMask> masks) override {
    ThreadPool::global().parallel_for(static_cast<int64_t>(masks.size()), [&](int64_t m0,
                                                                              int64_t m1, int) {
      for (int64_t i = m0; i < m1; ++i)
        apply_logit_mask(logits.ptr<float>() + masks[i].row * logits.stride, logits.cols, masks[i]);
    });
  }

 private:
  std::vector<HostBuffer> chunks_;
  std::vector<int32_t> tokens_;  // upload()'s tokens with HostBatch::sampled filled in
  size_t chunk_used_ = 0, used_ = 0, high_water_ = 0;
};

}  // namespace

std::unique_ptr<ComputeBackend> make_cpu_backend() {
  cpu::cpu_env_tuning();  // a malformed TESSERA_CPU_TUNING fails here, before any op
  return std::make_unique<CpuBackend>();
}

}  // namespace tessera
