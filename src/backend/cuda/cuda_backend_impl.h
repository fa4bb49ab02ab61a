// The CUDA backend's class (internal to src/backend/cuda/): the memory and weight upload inline
// here, cuda_ops.cpp the ops (each a kernel launch, or for a fused op its fused kernel where the
// shapes allow and the composition elsewhere; no state is kept between ops), cuda_batch.cpp the
// batch upload, the CUDA-graph replay and the attention dispatch, cuda_sample.cpp the sampler's
// host side.
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
  CudaBackend() {
    TS_CUDA(cudaSetDevice(0));
    TS_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TS_CUDA(cudaStreamCreateWithFlags(&up_stream_, cudaStreamNonBlocking));
    TS_CUDA(cudaStreamCreateWithFlags(&down_stream_, cudaStreamNonBlocking));
    for (auto& e : staging_done_) TS_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    TS_CUDA(cudaEventCreateWithFlags(&batch_copied_, cudaEventDisableTiming));
    TS_CUDA(cudaEventCreateWithFlags(&sample_done_, cudaEventDisableTiming));
    TS_CUDA(cudaEventCreateWithFlags(&sample_ready_, cudaEventDisableTiming));
    TS_CUDA(cudaEventCreateWithFlags(&sample_inputs_, cudaEventDisableTiming));
    TS_CUDA(cudaEventCreateWithFlags(&batch_installed_, cudaEventDisableTiming));
    linear_ = std::make_unique<LinearOps>();
    controls_.gemv_max_m = linear_->gemv_max_m();
    if (std::getenv("TESSERA_CUDA_GRAPHS") &&
        std::string(std::getenv("TESSERA_CUDA_GRAPHS")) == "0")
      controls_.graphs = false;
    if (const char* e = std::getenv("TESSERA_GEMV")) {
      const std::string v = e;
      controls_.gemv_kind = v == "rows"     ? 0
                            : v == "cores"  ? 2
                            : v == "stream" ? 3
                            : v == "mma"    ? 4
                                            : 1;
    }
    if (std::getenv("TESSERA_FUSE") && std::string(std::getenv("TESSERA_FUSE")) == "0")
      controls_.fuse = controls_.fuse_gemv = false;
    if (std::getenv("TESSERA_FUSE_GEMV") && std::string(std::getenv("TESSERA_FUSE_GEMV")) == "0")
      controls_.fuse_gemv = false;
    if (std::getenv("TESSERA_FUSE_ATTN_ROPE") &&
        std::string(std::getenv("TESSERA_FUSE_ATTN_ROPE")) == "0")
      controls_.fuse_attn_rope = false;
    if (const char* e = std::getenv("TESSERA_PREFETCH")) controls_.prefetch_percent = std::atoi(e);
    if (const char* e = std::getenv("TESSERA_PREFETCH_SKIP"))
      controls_.prefetch_skip_percent = std::atoi(e);
    if (std::getenv("TESSERA_FUSE_ARGMAX") &&
        std::string(std::getenv("TESSERA_FUSE_ARGMAX")) == "0")
      controls_.fuse_argmax = false;
    progress_ = isatty(2) != 0;
  }

  ~CudaBackend() override {
    cudaStreamSynchronize(stream_);
    cudaStreamSynchronize(up_stream_);
    cudaStreamSynchronize(down_stream_);
    end_progress();
    for (auto& [k, g] : graphs_)
      if (g.exec) cudaGraphExecDestroy(g.exec);
    for (auto& e : staging_done_) cudaEventDestroy(e);
    cudaEventDestroy(batch_copied_);
    cudaEventDestroy(sample_done_);
    cudaEventDestroy(sample_ready_);
    cudaEventDestroy(sample_inputs_);
    cudaEventDestroy(batch_installed_);
    linear_.reset();
    cudaStreamDestroy(stream_);
    cudaStreamDestroy(up_stream_);
    cudaStreamDestroy(down_stream_);
  }

  CudaBackendControls& controls() { return controls_; }

  Device device() const override { return Device::cuda; }
  std::string name() const override { return "cuda (" + cuda_device_description() + ")"; }
  DType act_dtype() const override { return DType::bf16; }

  // --- memory ---
  std::unique_ptr<DeviceBuffer> alloc(size_t bytes, const char* what) override {
    no_alloc_while_capturing(what);
    return std::make_unique<CudaBuffer>(bytes, what);
  }
  void copy_to_device(void* dst, const void* src, size_t bytes) override {
    TS_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
    TS_CUDA(cudaStreamSynchronize(stream_));
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    TS_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
    TS_CUDA(cudaStreamSynchronize(stream_));
  }
  void synchronize() override {
    TS_CUDA(cudaStreamSynchronize(stream_));
    TS_CUDA(cudaStreamSynchronize(down_stream_));
  }
  size_t device_free_bytes() override {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return free;
  }

  std::unique_ptr<Weight> upload_weight(std::span<const HostTensor* const> parts, DType dtype,
                                        const std::string& what) override {
    TS_ASSERT(!parts.empty());
    if (dtype != DType::f32 && dtype != DType::bf16)
      fail_arg("CUDA weights are stored as f32 or bf16, not " + std::string(dtype_name(dtype)));
    auto w = std::make_unique<CudaWeight>();
    w->cols = parts[0]->shape.size() == 2 ? parts[0]->shape[1] : 1;
    for (const HostTensor* p : parts) {
      TS_ASSERT(p->shape.size() == 2 && p->shape[1] == w->cols);
      if (p->dtype != DType::f32 && p->dtype != DType::bf16 && p->dtype != DType::f16)
        fail_model(p->name + " has dtype " + dtype_name(p->dtype) +
                   ", which the CUDA backend cannot load");
      w->rows += p->shape[0];
    }
    w->dtype = dtype;
    w->bytes = static_cast<size_t>(w->rows * w->cols) * dtype_size(dtype);
    w->buffer = std::make_unique<CudaBuffer>(w->bytes, what.c_str());
    if (staging_[0].size() == 0)
      for (auto& s : staging_) s = PinnedBuffer(kStagingBytes, "weight upload staging");
    char* dst = static_cast<char*>(w->buffer->data());
    const size_t esz = dtype_size(dtype);
    const size_t per_chunk = kStagingBytes / std::max<size_t>(esz, 4);
    for (const HostTensor* p : parts) {
      const size_t n = static_cast<size_t>(p->numel());
      const char* src = static_cast<const char*>(p->data);
      for (size_t off = 0; off < n; off += per_chunk) {
        const size_t cnt = std::min(per_chunk, n - off);
        const int slot = staging_turn_++ & 1;
        TS_CUDA(cudaEventSynchronize(staging_done_[slot]));  // its previous copy has left
        convert_host(src + off * dtype_size(p->dtype), p->dtype, staging_[slot].data(), dtype, cnt);
        TS_CUDA(cudaMemcpyAsync(dst, staging_[slot].data(), cnt * esz, cudaMemcpyHostToDevice,
                                stream_));
        TS_CUDA(cudaEventRecord(staging_done_[slot], stream_));
        dst += cnt * esz;
        uploaded_ += cnt * esz;
      }
    }
    if (progress_ && uploaded_ - last_progress_ >= (64u << 20)) {
      last_progress_ = uploaded_;
      std::fprintf(stderr, "\rtessera: uploading weights to the GPU: %.2f GiB",
                   static_cast<double>(uploaded_) / (1024.0 * 1024 * 1024));
      progress_line_ = true;
    }
    return w;
  }

  void scratch_reset() override {
    end_progress();
    if (staging_[0].size() != 0) {  // loading is over: give the staging memory back
      synchronize();
      for (auto& s : staging_) s = PinnedBuffer();
    }
    if (chunks_.size() > 1 || (chunks_.size() == 1 && high_water_ > chunks_[0]->size())) {
      no_alloc_while_capturing("scratch");
      chunks_.clear();
      chunks_.push_back(std::make_unique<CudaBuffer>(high_water_, "cuda activations"));
    }
    used_ = 0;
    chunk_used_ = 0;
  }

  Tensor scratch(int64_t rows, int64_t cols, DType dt) override {
    const size_t bytes = (static_cast<size_t>(rows * cols) * dtype_size(dt) + 255) / 256 * 256;
    if (chunks_.empty() || chunk_used_ + bytes > chunks_.back()->size()) {
      no_alloc_while_capturing("scratch");
      chunks_.push_back(
          std::make_unique<CudaBuffer>(std::max<size_t>(bytes, 4u << 20), "cuda activations"));
      chunk_used_ = 0;
    }
    void* p = static_cast<char*>(chunks_.back()->data()) + chunk_used_;
    chunk_used_ += bytes;
    used_ += bytes;
    high_water_ = std::max(high_water_, used_);
    return Tensor{p, dt, rows, cols, cols};
  }

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
  void no_alloc_while_capturing(const char* what) {
    if (capturing_)
      throw Error(ErrorKind::internal, std::string("CUDA graph capture: an allocation for ") +
                                           what +
                                           " during capture (sizes must settle in the "
                                           "eager warm-up run)");
  }
  void end_progress() {
    if (progress_line_) {
      std::fprintf(stderr, "\rtessera: uploaded %.2f GiB of weights to the GPU\n",
                   static_cast<double>(uploaded_) / (1024.0 * 1024 * 1024));
      progress_line_ = false;
    }
  }
  // Pinned host staging of at least `bytes` (waits until the previous batch copy has left it).
  void* host_staging(size_t bytes) {
    TS_CUDA(cudaEventSynchronize(batch_copied_));
    if (batch_host_.size() < bytes)
      batch_host_ = PinnedBuffer(std::max(bytes, batch_host_.size() * 2), "batch staging");
    return batch_host_.data();
  }
  void* device_batch(size_t bytes) {
    if (!batch_dev_.buf || batch_dev_.buf->size() < bytes) {
      no_alloc_while_capturing("batch");
      batch_dev_.get(bytes, "batch arrays");
    }
    return batch_dev_.buf->data();
  }

  // A workspace of at least `bytes` (allocating only outside graph capture).
  void* grow(GrowBuffer& g, size_t bytes, const char* what) {
    if (!g.buf || g.buf->size() < bytes) {
      no_alloc_while_capturing(what);
      g.get(bytes, what);
    }
    return g.buf->data();
  }
  // `n` counters that are zero (kernels using them leave them zero).
  int* zeroed_counters(GrowBuffer& g, size_t& count, size_t n) {
    if (!g.buf || count < n) {
      no_alloc_while_capturing("attention counters");
      g.get(n * sizeof(int), "attention counters");
      count = g.buf->size() / sizeof(int);
      TS_CUDA(cudaMemsetAsync(g.buf->data(), 0, g.buf->size(), stream_));
    }
    return static_cast<int*>(g.buf->data());
  }

  // The linear layers with this backend's path and kernel choices (controls_).
  LinearOps& lin() {
    linear_->set_force_path(controls_.linear_path);
    linear_->set_gemv_max_m(controls_.gemv_max_m);
    linear_->set_gemv_kind(controls_.gemv_kind);
    return *linear_;
  }
  // The streaming GEMV with the fusions in f (its norm prologue's operands, the gated epilogue)
  // and, with greedy_ids (an LM head at M = 1), the greedy pick; false, with nothing launched,
  // where the shape does not allow them (cuda_ops.cpp).
  bool fused_gemv(Tensor x, const Weight& w, const Tensor* bias, Tensor out, GemvFusion f,
                  int32_t* greedy_ids = nullptr);
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
  size_t argmax_counter_count_ = 0;

  cudaStream_t stream_ = nullptr;  // every kernel
  // Copies kept off the compute stream's critical path: batches and sampler parameters to the
  // device (joined by an event before use), sampled ids and logprobs back to the host.
  cudaStream_t up_stream_ = nullptr, down_stream_ = nullptr;
  std::unique_ptr<LinearOps> linear_;
  CudaBackendControls controls_;

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
