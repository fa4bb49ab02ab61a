// The CUDA backend's class (internal to src/backend/cuda/): cuda_backend.cpp holds the memory,
// weight upload and op wrappers inline here, cuda_batch.cpp the batch upload, the CUDA-graph replay
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
  bool rows_all;  // BatchView::logit_rows_all: the model's ops differ with it
  bool operator<(const GraphKey& o) const {
    return std::tie(T, S, R, groups, mb[0], mb[1], mb[2], mb[3], rows_all) <
           std::tie(o.T, o.S, o.R, o.groups, o.mb[0], o.mb[1], o.mb[2], o.mb[3], o.rows_all);
  }
};

// Logits whose greedy ids a fused LM head computed (GemvFusion::amax_id): row 0 of `logits`
// (`cols` wide) has its greedy id at `id` on the device, until an op writes the logits again.
struct LogitsArgmax {
  const void* logits = nullptr;
  int64_t cols = 0;
  const int32_t* id = nullptr;
};

struct GraphEntry {
  cudaGraphExec_t exec = nullptr;
  uint64_t epoch = 0;   // free_epoch() when captured
  bool warmed = false;  // ran eagerly once (sizes every lazily grown workspace)
  LogitsArgmax argmax;  // what its forward leaves (a replay does not run the ops that set it)
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
    flush();
    TS_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
    TS_CUDA(cudaStreamSynchronize(stream_));
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    flush();
    TS_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
    TS_CUDA(cudaStreamSynchronize(stream_));
  }
  void synchronize() override {
    flush();
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
    flush();
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
    flush();
    argmax_ = LogitsArgmax{};
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

  // --- ops ---
  void embed(const Weight& table, const int32_t* ids, int n, float scale, bool round,
             Tensor out) override {
    flush();
    const auto& w = static_cast<const CudaWeight&>(table);
    cuda::embed(w.data(), w.dtype, w.rows, w.cols, ids, n, scale, round, out, stream_);
  }
  void rms_norm(Tensor x, Tensor w, float eps, Tensor out) override {
    flush();
    cuda::rms_norm(x, w, eps, out, stream_);
  }
  void add_rms_norm(Tensor residual, Tensor y, const Tensor* w_y, const Tensor* w_out, float eps,
                    Tensor out) override {
    flush();
    if (controls_.fuse_gemv && w_out && y.dtype == DType::bf16 && out.dtype == DType::bf16 &&
        residual.dtype == DType::f32 && residual.rows == y.rows && out.rows == y.rows &&
        residual.cols == y.cols && out.cols == y.cols && y.rows >= 1 && y.rows <= 8) {
      // A GEMV on `out` may follow and compute this norm itself: see linear().
      norm_ =
          PendingNorm{true, residual, y, w_y ? *w_y : Tensor{}, *w_out, w_y != nullptr, eps, out};
      return;
    }
    cuda::add_rms_norm(residual, y, w_y, w_out, eps, out, stream_);
  }
  void linear(Tensor x, const Weight& w, const Tensor* bias, Tensor out) override {
    if (out.data == argmax_.logits) argmax_ = LogitsArgmax{};
    if (!fused_linear(x, w, bias, out, nullptr)) {
      flush();
      const auto& cw = static_cast<const CudaWeight&>(w);
      linear_->linear(x, cw.data(), cw.dtype, cw.rows, cw.cols,
                      bias ? bias->ptr<const float>() : nullptr, out, stream_);
    }
  }
  // gate_up and the activation as one GEMV (its gated epilogue; gate_up is not written), with
  // the pending add_rms_norm as its prologue when x is that norm's output.
  void linear_gated(Tensor x, const Weight& w, const Tensor* bias, Activation act, Tensor gate_up,
                    Tensor out) override {
    if (!fused_linear(x, w, bias, out, &act))
      ComputeBackend::linear_gated(x, w, bias, act, gate_up, out);
  }
  void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* q_norm, const Tensor* k_norm,
                    float eps, const int32_t* positions, Tensor inv_freq) override {
    flush();
    rope_ = PendingRope{};
    rope_.on = true;
    rope_.qkv = qkv;
    rope_.nh = nh;
    rope_.nkv = nkv;
    rope_.hd = hd;
    rope_.has_q = q_norm != nullptr;
    rope_.has_k = k_norm != nullptr;
    if (q_norm) rope_.q_norm = *q_norm;
    if (k_norm) rope_.k_norm = *k_norm;
    rope_.eps = eps;
    rope_.positions = positions;
    rope_.inv_freq = inv_freq;
  }
  void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                const int32_t* slot_mapping) override {
    if (rope_.on && controls_.fuse && rope_.qkv.data == qkv.data && rope_.qkv.rows == qkv.rows &&
        rope_.qkv.stride == qkv.stride && rope_.nh == nh && rope_.nkv == nkv && rope_.hd == hd &&
        qk_norm_rope_store_supported(qkv, kv)) {
      // Deferred once more: a decode attention on this qkv and cache takes both over
      // (CudaBackend::attention); anything else launches them as one kernel (flush).
      rope_.store = true;
      rope_.kv = kv;
      rope_.slots = slot_mapping;
      return;
    }
    flush();
    cuda::kv_store(qkv, nh, nkv, hd, kv, slot_mapping, stream_);
  }
  void attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv, const BatchView& b,
                 int group, float scale, int window, float softcap, Tensor out) override;
  void gated_act(Tensor gate_up, Activation act, Tensor out) override {
    flush();
    cuda::gated_act(gate_up, act, out, stream_);
  }
  void prefetch_gated(const Weight& w) override {
    const auto& cw = static_cast<const CudaWeight&>(w);
    if (cw.dtype == DType::bf16)
      linear_->set_prefetch_gated(cw.data(), cw.rows, cw.cols, controls_.prefetch_percent,
                                  controls_.prefetch_skip_percent);
  }
  void gather_rows(Tensor x, const int32_t* rows, int n, Tensor out) override {
    flush();
    cuda::gather_rows(x, rows, n, out, stream_);
  }
  void softcap(Tensor x, float cap) override {
    flush();
    if (x.data == argmax_.logits) argmax_ = LogitsArgmax{};
    cuda::softcap(x, cap, stream_);
  }
  void sample(Tensor logits, const SampleBatch& batch, SampleOutput& out) override;
  void sample_async(Tensor logits, const SampleBatch& batch) override;
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

  // qk_norm_rope is deferred until the next op: when that op is the kv_store of the same qkv (as
  // the decoder issues them), both run as one fused kernel; anything else launches it first.
  struct PendingRope {
    bool on = false;
    bool store = false;  // the kv_store too (into kv at slots)
    KvLayerView kv;
    const int32_t* slots = nullptr;
    Tensor qkv, q_norm, k_norm, inv_freq;
    bool has_q = false, has_k = false;
    int nh = 0, nkv = 0, hd = 0;
    float eps = 0.f;
    const int32_t* positions = nullptr;
  } rope_;
  // An add_rms_norm is deferred the same way: a decode-sized GEMV on its output computes it as
  // a prologue (fused_linear).
  struct PendingNorm {
    bool on = false;
    Tensor residual, y, w_y, w_out;
    bool has_w_y = false;
    float eps = 0.f;
    Tensor out;
  } norm_;
  GrowBuffer fuse_counter_;
  size_t fuse_counter_count_ = 0;
  // The LM head's fused greedy pick: its id and per-block partials, its counter, and which logits
  // it describes (LogitsArgmax; cleared by scratch_reset and by any op writing those logits).
  GrowBuffer argmax_dev_, argmax_counter_;
  size_t argmax_counter_count_ = 0;
  LogitsArgmax argmax_;
  // Runs linear (gated: with the activation epilogue, out [M, N / 2]) as the streaming GEMV with
  // the pending add_rms_norm as its prologue when x is that norm's output, where the shape allows
  // a fusion and one is wanted; false (nothing launched) otherwise.
  bool fused_linear(Tensor x, const Weight& w, const Tensor* bias, Tensor out,
                    const Activation* gated) {
    const auto& cw = static_cast<const CudaWeight&>(w);
    linear_->set_force_path(controls_.linear_path);
    linear_->set_gemv_max_m(controls_.gemv_max_m);
    linear_->set_gemv_kind(controls_.gemv_kind);
    if (!controls_.fuse_gemv || controls_.linear_path != 0) return false;
    GemvFusion f;
    f.norm = norm_.on && x.data == norm_.out.data && x.rows == norm_.out.rows &&
             x.stride == norm_.out.stride && x.cols == norm_.out.cols;
    if (f.norm) {
      f.res = norm_.residual.ptr<float>();
      f.res_stride = norm_.residual.stride;
      f.y = norm_.y.ptr<const bf16>();
      f.y_stride = norm_.y.stride;
      f.w_y = norm_.has_w_y ? norm_.w_y.ptr<const float>() : nullptr;
      f.w_out = norm_.w_out.ptr<const float>();
      f.eps = norm_.eps;
      f.h = norm_.out.ptr<bf16>();
      f.h_stride = norm_.out.stride;
    }
    if (gated) {
      f.gated = true;
      f.act = *gated;
    }
    if ((!f.norm && !f.gated) ||
        !linear_->gemv_fusable(x, cw.data(), cw.dtype, cw.rows, cw.cols, out, f))
      return false;
    if (f.norm) {
      norm_.on = false;
      f.counter = zeroed_counters(fuse_counter_, fuse_counter_count_, 1);
    }
    if (out.dtype == DType::f32 && controls_.fuse_argmax) {  // an LM head (gemv_fusable)
      auto* ws = static_cast<char*>(grow(argmax_dev_, 256 + kGemvArgmaxMaxBlocks * 8, "argmax"));
      f.amax_id = reinterpret_cast<int32_t*>(ws);
      f.amax_part = reinterpret_cast<float*>(ws + 256);
      f.amax_count = zeroed_counters(argmax_counter_, argmax_counter_count_, 1);
      argmax_ = LogitsArgmax{out.data, out.cols, f.amax_id};
    }
    flush();
    linear_->linear(x, cw.data(), cw.dtype, cw.rows, cw.cols,
                    bias ? bias->ptr<const float>() : nullptr, out, stream_, &f);
    return true;
  }
  void flush() {
    if (norm_.on) {
      norm_.on = false;
      cuda::add_rms_norm(norm_.residual, norm_.y, norm_.has_w_y ? &norm_.w_y : nullptr,
                         &norm_.w_out, norm_.eps, norm_.out, stream_);
    }
    if (!rope_.on) return;
    rope_.on = false;
    launch_rope(rope_);
  }
  void launch_rope(const PendingRope& r) {
    if (r.store) {
      qk_norm_rope_store(r.qkv, r.nh, r.nkv, r.hd, r.has_q ? &r.q_norm : nullptr,
                         r.has_k ? &r.k_norm : nullptr, r.eps, r.positions, r.inv_freq, r.kv,
                         r.slots, stream_);
    } else {
      cuda::qk_norm_rope(r.qkv, r.nh, r.nkv, r.hd, r.has_q ? &r.q_norm : nullptr,
                         r.has_k ? &r.k_norm : nullptr, r.eps, r.positions, r.inv_freq, stream_);
    }
  }

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
  GrowBuffer sample_dev_, sample_work_, greedy_dev_, greedy_counters_;
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
