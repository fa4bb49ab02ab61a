// The CUDA backend's class (internal to src/backend/cuda/): cuda_backend.cpp its start and end,
// cuda_memory_ops.cpp the memory, weight upload and scratch arena, cuda_ops.cpp the ops (each a
// kernel launch, or for a fused op its fused kernel where the shapes allow and the composition
// elsewhere; no state is kept between ops), cuda_batch.cpp the batch upload, the CUDA-graph replay
// and the attention dispatch, cuda_sample.cpp the sampler's host side.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/activation.h"
#include "backend/cuda/attention.h"
#include "backend/cuda/batch.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/embed.h"
#include "backend/cuda/kv_cache.h"
#include "backend/cuda/linear.h"
#include "backend/cuda/norm.h"
#include "backend/cuda/quant.h"
#include "backend/cuda/rope.h"
#include "backend/cuda/sampling.h"
#include "core/check.h"

namespace tessera::cuda {

constexpr size_t kStagingBytes = 64u << 20;  // per weight-upload staging buffer (two of them)
constexpr int kMaxGraphSeqs = 512;           // decode batches above this run eagerly

// Converts n elements of src_dt (f32, bf16, f16) to dst_dt (f32 or bf16) on the host.
void convert_host(const void* src, DType src_dt, void* dst, DType dst_dt, size_t n);

struct GraphKey {
  int T, S, R, groups;
  int mb[kMaxKvGroups];
  // BatchView::logit_rows_all and greedy_ids: the model's ops differ with them
  bool rows_all, greedy;
  bool operator<(const GraphKey& o) const {
    return std::tie(T, S, R, groups, mb[0], mb[1], mb[2], mb[3], rows_all, greedy) <
           std::tie(o.T, o.S, o.R, o.groups, o.mb[0], o.mb[1], o.mb[2], o.mb[3], o.rows_all,
                    o.greedy);
  }
};

struct GraphEntry {
  cudaGraphExec_t exec = nullptr;
  uint64_t epoch = 0;   // free_epoch() when captured
  bool warmed = false;  // ran eagerly once (sizes every lazily grown workspace)
};

class CudaBackend final : public ComputeBackend {
 public:
  // cuda_backend.cpp
  CudaBackend();
  ~CudaBackend() override;

  CudaTuning& tuning() { return tuning_; }

  Device device() const override { return Device::cuda; }
  std::string name() const override { return "cuda (" + cuda_device_description() + ")"; }
  DType act_dtype() const override { return DType::bf16; }

  // --- memory (cuda_memory_ops.cpp) ---
  std::unique_ptr<DeviceBuffer> alloc(size_t bytes, const char* what) override;
  void copy_to_device(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, const void* src, size_t bytes) override;
  void synchronize() override;
  size_t device_free_bytes() override;
  // Weights go through two pinned staging buffers, converted to `dtype` on the host while the
  // other buffer's copy runs.
  std::unique_ptr<Weight> upload_weight(std::span<const HostTensor* const> parts, DType dtype,
                                        const std::string& what) override;
  // Quantized weights (cuda_quant_ops.cpp).
  std::unique_ptr<Weight> upload_quantized(std::span<const HostQuantTensor* const> parts,
                                           DType dtype, const std::string& what) override;
  // The scratch arena: chunks while a forward's sizes are still growing, one buffer of the high
  // water mark after (stable addresses for graph replays); the weight-upload staging goes back
  // at the first reset.
  void scratch_reset() override;
  Tensor scratch(int64_t rows, int64_t cols, DType dt) override;

  // --- batches, graphs, attention (cuda_batch.cpp) ---
  BatchView upload(const HostBatch& b) override;
  void run_forward(const BatchView& b, const std::function<void()>& ops) override;

  // --- ops (cuda_ops.cpp) ---
  void embed(const Weight& table, const int32_t* ids, int n, float scale, bool round,
             Tensor out) override;
  void rms_norm(Tensor x, Tensor w, float eps, Tensor out) override;
  void add_rms_norm(Tensor residual, Tensor y, const Tensor* w_y, const Tensor* w_out, float eps,
                    Tensor out) override;
  void linear(Tensor x, const Weight& w, const Tensor* bias, Tensor out) override;
  void linear_gated(Tensor x, const Weight& w, const Tensor* bias, Activation act, Tensor gate_up,
                    Tensor out) override;
  void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* q_norm, const Tensor* k_norm,
                    float eps, const int32_t* positions, Tensor inv_freq) override;
  void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                const int32_t* slot_mapping) override;
  void attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv, const BatchView& b,
                 int group, float scale, int window, float softcap, Tensor out) override;
  void gated_act(Tensor gate_up, Activation act, Tensor out) override;
  void gather_rows(Tensor x, const int32_t* rows, int n, Tensor out) override;
  void softcap(Tensor x, float cap) override;
  void argmax_rows(Tensor logits, int32_t* ids) override;
  void norm_linear(const ResidualNorm& n, const Weight& w, const Tensor* bias, Tensor out) override;
  void norm_linear_gated(const ResidualNorm& n, const Weight& w_gate_up, Activation act,
                         Tensor gate_up, Tensor out) override;
  void norm_lm_head(const ResidualNorm& n, const Weight& w, float cap, Tensor logits,
                    int32_t* greedy_ids) override;
  void rope_store_attention(Tensor qkv, const AttentionLayer& l, const KvLayerView& kv,
                            const BatchView& b, Tensor out) override;
  void linear_prefetch(Tensor x, const Weight& w, const Tensor* bias, Tensor out,
                       const Weight& next) override;
  void sample(Tensor logits, const SampleBatch& batch, SampleOutput& out) override;
  void sample_async(Tensor logits, const SampleBatch& batch,
                    const int32_t* greedy_ids = nullptr) override;
  void sample_wait(SampleOutput& out) override;
  void download_sampled(char* host, const void* dev, size_t bytes, int rows);

 private:
  // cuda_memory_ops.cpp
  // Throws Error(internal) while a graph is being captured (an allocation there would be left out
  // of the graph; sizes settle in the eager warm-up run).
  void no_alloc_while_capturing(const char* what);
  void end_progress();  // ends the weight-upload progress line
  // Pinned host staging of at least `bytes` (waits until the previous batch copy has left it).
  void* host_staging(size_t bytes);
  void* device_batch(size_t bytes);
  // A workspace of at least `bytes` (allocating only outside graph capture).
  void* grow(GrowBuffer& g, size_t bytes, const char* what);
  // `n` counters that are zero (kernels using them leave them zero).
  int* zeroed_counters(GrowBuffer& g, size_t& count, size_t n);

  // The linear layers with this backend's path and kernel choices (tuning_).
  LinearOps& lin() {
    linear_->set_force_path(tuning_.linear);
    linear_->set_gemv_kind(tuning_.gemv);
    return *linear_;
  }
  // The streaming GEMV with the fusions in f (its norm prologue's operands, the gated epilogue)
  // and, with greedy_ids (an LM head at M = 1), the greedy pick; false, with nothing launched,
  // where the shape does not allow them (cuda_ops.cpp).
  bool fused_gemv(Tensor x, const Weight& w, const Tensor* bias, Tensor out, GemvFusion f,
                  int32_t* greedy_ids = nullptr);
  // linear() on a quantized weight (cuda_quant_ops.cpp): the packed GEMV where it takes the
  // shape, else dequantized tiles and the dense product.
  void quant_linear(Tensor x, const Weight& w, const float* bias, Tensor out);
  // The attention kernels for p (prefill, decode, generic), the decode kernel doing the q/k norm,
  // RoPE and KV store too with `rope` (cuda_batch.cpp).
  void run_attention(const AttnParams& p, const BatchView& b, int group, const DecodeRope* rope);
  AttnParams attn_params(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                         const BatchView& b, int group, float scale, int window, float softcap,
                         Tensor out) const;

  // Workspaces of the fused kernels: the norm prologue's counter, the LM head's greedy pick
  // (per-block partials and a counter).
  GrowBuffer fuse_counter_;
  size_t fuse_counter_count_ = 0;
  GrowBuffer argmax_dev_, argmax_counter_;
  GrowBuffer dequant_tile_;  // quant_linear's tile
  size_t argmax_counter_count_ = 0;

  cudaStream_t stream_ = nullptr;  // every kernel
  // Copies kept off the compute stream's critical path: batches and sampler parameters to the
  // device (joined by an event before use), sampled ids and logprobs back to the host.
  cudaStream_t up_stream_ = nullptr, down_stream_ = nullptr;
  std::unique_ptr<LinearOps> linear_;
  CudaTuning tuning_ = cuda_env_tuning();

  // weight upload
  PinnedBuffer staging_[2];
  cudaEvent_t staging_done_[2] = {nullptr, nullptr};
  unsigned staging_turn_ = 0;
  size_t uploaded_ = 0, last_progress_ = 0;
  bool progress_ = false, progress_line_ = false;

  // scratch arena
  std::vector<std::unique_ptr<CudaBuffer>> chunks_;
  size_t chunk_used_ = 0, used_ = 0, high_water_ = 0;

  // batches
  PinnedBuffer batch_host_;
  GrowBuffer batch_dev_, batch_stage_;  // live (read by the forward), staged (up_stream_'s copy)
  cudaEvent_t batch_copied_ = nullptr, batch_installed_ = nullptr;
  struct LastUpload {
    const int32_t* tokens = nullptr;  // device pointer of the view it describes
    int n_single = 0;                 // sequences with one new token
    bool graphable = false;
    GraphKey key{};
  } last_;

  // graphs
  std::map<GraphKey, GraphEntry> graphs_;
  bool capturing_ = false;

  // attention decode workspace
  GrowBuffer attn_partials_, attn_counters_, prefill_partials_;
  size_t attn_counter_count_ = 0;

  // sampling
  PinnedBuffer sample_host_;
  GrowBuffer sample_dev_, sample_work_, greedy_dev_, greedy_counters_, greedy_ids_dev_;
  size_t greedy_counter_count_ = 0;
  // The last sample_async(): whether it still awaits sample_wait(), where its results land in
  // sample_host_ and what to read there, and its ids on the device (upload()'s
  // HostBatch::sampled).
  struct LastSample {
    bool pending = false;
    int rows = 0, top_n = 0;
    bool any_lp = false;
    const char* host = nullptr;
    const int32_t* dev_ids = nullptr;
    size_t b_ids = 0, b_lp = 0, b_tid = 0;  // offsets of the logprobs and top lists after host
    std::vector<int> row_top_n;             // per row: top logprobs wanted, -1: no logprob
  } sampled_;
  // sample_inputs_: parameters on the device (up_stream_); sample_ready_: the sampler's kernels
  // done (stream_); sample_done_: its results in sample_host_ (down_stream_).
  cudaEvent_t sample_done_ = nullptr, sample_ready_ = nullptr, sample_inputs_ = nullptr;
};

}  // namespace tessera::cuda
