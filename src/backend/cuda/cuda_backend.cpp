// The CUDA backend: tracked device memory, weights uploaded once through pinned staging (dtype
// converted on the host), a scratch arena at stable addresses, batches staged through pinned
// memory into one device buffer, decode steps captured as CUDA graphs per batch-size bucket, and
// the ops in the .cu files beside this one (one op family per file).
#include <unistd.h>

#include <algorithm>
#include <chrono>
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
#include "core/thread_pool.h"

namespace tessera {
namespace cuda {
namespace {

constexpr size_t kStagingBytes = 64u << 20;  // per weight-upload staging buffer (two of them)
constexpr int kMaxGraphSeqs = 512;           // decode batches above this run eagerly

// Decode batch-size buckets: 1, 2, 4, 8, then multiples of 16 up to 256, then of 64.
int bucket_of(int n) {
  if (n <= 8) {
    int b = 1;
    while (b < n) b <<= 1;
    return b;
  }
  if (n <= 256) return (n + 15) / 16 * 16;
  return (n + 63) / 64 * 64;
}

int next_pow2(int n) {
  int b = 1;
  while (b < n) b <<= 1;
  return b;
}

// Converts n elements of src_dt (f32, bf16, f16) to dst_dt (f32 or bf16) on the host.
void convert_host(const void* src, DType src_dt, void* dst, DType dst_dt, size_t n) {
  if (src_dt == dst_dt) {
    std::memcpy(dst, src, n * dtype_size(src_dt));
    return;
  }
  const int64_t chunk = 1 << 16;
  ThreadPool::global().parallel_for(
      static_cast<int64_t>((n + chunk - 1) / chunk), [&](int64_t c0, int64_t c1, int) {
        const size_t i0 = static_cast<size_t>(c0 * chunk);
        const size_t i1 = std::min(n, static_cast<size_t>(c1 * chunk));
        auto* s16 = static_cast<const uint16_t*>(src);
        auto* s32 = static_cast<const float*>(src);
        for (size_t i = i0; i < i1; ++i) {
          const float v = src_dt == DType::f32    ? s32[i]
                          : src_dt == DType::bf16 ? bf16_to_f32(s16[i])
                                                  : f16_to_f32(s16[i]);
          if (dst_dt == DType::f32) {
            static_cast<float*>(dst)[i] = v;
          } else {
            static_cast<uint16_t*>(dst)[i] = f32_to_bf16(v);
          }
        }
      });
}

struct GraphKey {
  int T, S, R, groups;
  int mb[kMaxKvGroups];
  bool operator<(const GraphKey& o) const {
    return std::tie(T, S, R, groups, mb[0], mb[1], mb[2], mb[3]) <
           std::tie(o.T, o.S, o.R, o.groups, o.mb[0], o.mb[1], o.mb[2], o.mb[3]);
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
    for (auto& e : staging_done_) TS_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    TS_CUDA(cudaEventCreateWithFlags(&batch_copied_, cudaEventDisableTiming));
    linear_ = std::make_unique<LinearOps>();
    controls_.gemv_max_m = linear_->gemv_max_m();
    if (std::getenv("TESSERA_CUDA_GRAPHS") &&
        std::string(std::getenv("TESSERA_CUDA_GRAPHS")) == "0")
      controls_.graphs = false;
    if (std::getenv("TESSERA_FUSE") && std::string(std::getenv("TESSERA_FUSE")) == "0")
      controls_.fuse = false;
    if (std::getenv("TESSERA_FUSE_NORM") && std::string(std::getenv("TESSERA_FUSE_NORM")) == "1")
      controls_.fuse_norm = true;
    progress_ = isatty(2) != 0;
  }

  ~CudaBackend() override {
    cudaStreamSynchronize(stream_);
    end_progress();
    for (auto& [k, g] : graphs_)
      if (g.exec) cudaGraphExecDestroy(g.exec);
    for (auto& e : staging_done_) cudaEventDestroy(e);
    cudaEventDestroy(batch_copied_);
    linear_.reset();
    cudaStreamDestroy(stream_);
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
  }

  std::unique_ptr<Weight> upload_weight(std::span<const TensorInfo* const> parts, DType dtype,
                                        const std::string& what) override {
    flush();
    TS_ASSERT(!parts.empty());
    if (dtype != DType::f32 && dtype != DType::bf16)
      fail_arg("CUDA weights are stored as f32 or bf16, not " + std::string(dtype_name(dtype)));
    auto w = std::make_unique<CudaWeight>();
    w->cols = parts[0]->shape.size() == 2 ? parts[0]->shape[1] : 1;
    for (const TensorInfo* p : parts) {
      TS_ASSERT(p->shape.size() == 2 && p->shape[1] == w->cols);
      if (p->dtype != DType::f32 && p->dtype != DType::bf16 && p->dtype != DType::f16)
        fail_model(p->file + ": tensor '" + p->name + "' has dtype " + p->dtype_name +
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
    for (const TensorInfo* p : parts) {
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
    if (lin_.on && y.data == lin_.out.data && y.dtype == DType::bf16 && y.rows == lin_.x.rows &&
        y.stride == lin_.out.stride && y.cols == lin_.out.cols && residual.rows == y.rows &&
        residual.cols == y.cols && (!w_out || out.dtype == DType::bf16)) {
      // The GEMV that produced y runs this add_rms_norm in its last block: one launch less.
      NormEpilogue ep;
      ep.res = residual.ptr<float>();
      ep.res_stride = residual.stride;
      ep.w_y = w_y ? w_y->ptr<const float>() : nullptr;
      ep.w_out = w_out ? w_out->ptr<const float>() : nullptr;
      ep.eps = eps;
      ep.h = w_out ? out.ptr<bf16>() : nullptr;
      ep.h_stride = w_out ? out.stride : 0;
      ep.counter = zeroed_counters(fuse_counter_, fuse_counter_count_, 1);
      const PendingLinear l = lin_;
      lin_.on = false;
      linear_->linear(l.x, l.w->data(), l.w->dtype, l.w->rows, l.w->cols, l.bias, l.out, stream_,
                      &ep);
      return;
    }
    flush();
    cuda::add_rms_norm(residual, y, w_y, w_out, eps, out, stream_);
  }
  void linear(Tensor x, const Weight& w, const Tensor* bias, Tensor out) override {
    flush();
    const auto& cw = static_cast<const CudaWeight&>(w);
    linear_->set_force_path(controls_.linear_path);
    linear_->set_gemv_max_m(controls_.gemv_max_m);
    if (controls_.fuse_norm &&
        linear_->gemv_fusable(x, cw.data(), cw.dtype, cw.rows, cw.cols, out)) {
      lin_ = PendingLinear{true, x, &cw, bias ? bias->ptr<const float>() : nullptr, out};
      return;  // an add_rms_norm on its output may follow: see add_rms_norm
    }
    linear_->linear(x, cw.data(), cw.dtype, cw.rows, cw.cols,
                    bias ? bias->ptr<const float>() : nullptr, out, stream_);
  }
  void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* q_norm, const Tensor* k_norm,
                    float eps, const int32_t* positions, Tensor inv_freq) override {
    flush();
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
      rope_.on = false;
      qk_norm_rope_store(qkv, nh, nkv, hd, rope_.has_q ? &rope_.q_norm : nullptr,
                         rope_.has_k ? &rope_.k_norm : nullptr, rope_.eps, rope_.positions,
                         rope_.inv_freq, kv, slot_mapping, stream_);
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
  void gather_rows(Tensor x, const int32_t* rows, int n, Tensor out) override {
    flush();
    cuda::gather_rows(x, rows, n, out, stream_);
  }
  void softcap(Tensor x, float cap) override {
    flush();
    cuda::softcap(x, cap, stream_);
  }
  void sample(Tensor logits, const SampleBatch& batch, SampleOutput& out) override;

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
    Tensor qkv, q_norm, k_norm, inv_freq;
    bool has_q = false, has_k = false;
    int nh = 0, nkv = 0, hd = 0;
    float eps = 0.f;
    const int32_t* positions = nullptr;
  } rope_;
  // A GEMV whose output an add_rms_norm may consume next is deferred the same way.
  struct PendingLinear {
    bool on = false;
    Tensor x;
    const CudaWeight* w = nullptr;
    const float* bias = nullptr;
    Tensor out;
  } lin_;
  GrowBuffer fuse_counter_;
  size_t fuse_counter_count_ = 0;
  void flush() {
    if (lin_.on) {
      lin_.on = false;
      linear_->linear(lin_.x, lin_.w->data(), lin_.w->dtype, lin_.w->rows, lin_.w->cols, lin_.bias,
                      lin_.out, stream_);
    }
    if (!rope_.on) return;
    rope_.on = false;
    cuda::qk_norm_rope(rope_.qkv, rope_.nh, rope_.nkv, rope_.hd,
                       rope_.has_q ? &rope_.q_norm : nullptr, rope_.has_k ? &rope_.k_norm : nullptr,
                       rope_.eps, rope_.positions, rope_.inv_freq, stream_);
  }

  cudaStream_t stream_ = nullptr;
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
  GrowBuffer batch_dev_;
  cudaEvent_t batch_copied_ = nullptr;
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
};

BatchView CudaBackend::upload(const HostBatch& b) {
  flush();
  const int T = b.num_tokens(), S = b.num_seqs(), R = static_cast<int>(b.logit_rows.size());
  const int G = static_cast<int>(b.groups.size());
  TS_ASSERT(G <= kMaxKvGroups);
  bool all_single = S > 0;
  int n_single = 0, max_q = 0, max_kv = 0;
  for (int s = 0; s < S; ++s) {
    all_single &= b.seq_q_len[s] == 1;
    n_single += b.seq_q_len[s] == 1;
    max_q = std::max(max_q, b.seq_q_len[s]);
    max_kv = std::max(max_kv, b.seq_kv_len[s]);
  }
  const bool graphable = controls_.graphs && all_single && T == S && S <= kMaxGraphSeqs;
  const int Sp = graphable ? bucket_of(S) : S;
  const int Tp = graphable ? Sp : T;
  const int Rp = graphable && R > 0 ? Sp : R;
  int mb[kMaxKvGroups] = {0, 0, 0, 0};
  for (int g = 0; g < G; ++g)
    mb[g] = graphable ? next_pow2(std::max(1, b.groups[g].max_blocks)) : b.groups[g].max_blocks;

  // Layout of the staged arrays (int32 elements, each array 128-byte aligned).
  size_t off = 0;
  auto take = [&](size_t n) {
    size_t o = off;
    off += (n + 31) / 32 * 32;
    return o;
  };
  const size_t o_tok = take(Tp), o_pos = take(Tp), o_seq = take(Tp);
  const size_t o_qs = take(Sp), o_ql = take(Sp), o_kl = take(Sp);
  size_t o_bt[kMaxKvGroups], o_sm[kMaxKvGroups];
  for (int g = 0; g < G; ++g) {
    o_bt[g] = take(static_cast<size_t>(Sp) * mb[g]);
    o_sm[g] = take(Tp);
  }
  const size_t o_lr = take(std::max(Rp, 1));
  const size_t bytes = off * sizeof(int32_t);

  auto* h = static_cast<int32_t*>(host_staging(bytes));
  auto put = [&](size_t o, const std::vector<int32_t>& v, size_t n_pad, int32_t fill) {
    std::copy(v.begin(), v.end(), h + o);
    std::fill(h + o + v.size(), h + o + n_pad, fill);
  };
  put(o_tok, b.tokens, Tp, 0);
  put(o_pos, b.positions, Tp, 0);
  put(o_seq, b.token_seq, Tp, 0);
  for (int t = T; t < Tp; ++t) h[o_seq + t] = S + (t - T);  // padding row t is padding seq t
  put(o_qs, b.seq_q_start, Sp, 0);
  for (int s = S; s < Sp; ++s) h[o_qs + s] = T + (s - S);
  put(o_ql, b.seq_q_len, Sp, 1);
  put(o_kl, b.seq_kv_len, Sp, 0);  // padding sequences see no keys
  for (int g = 0; g < G; ++g) {
    const auto& gr = b.groups[g];
    int32_t* bt = h + o_bt[g];
    std::fill(bt, bt + static_cast<size_t>(Sp) * mb[g], -1);
    for (int s = 0; s < S; ++s)
      std::copy(gr.block_table.begin() + static_cast<int64_t>(s) * gr.max_blocks,
                gr.block_table.begin() + static_cast<int64_t>(s + 1) * gr.max_blocks,
                bt + static_cast<int64_t>(s) * mb[g]);
    put(o_sm[g], gr.slot_mapping, Tp, -1);  // padding rows write no K/V
  }
  put(o_lr, b.logit_rows, std::max(Rp, 1), Tp - 1);

  auto* d = static_cast<int32_t*>(device_batch(bytes));
  TS_CUDA(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream_));
  TS_CUDA(cudaEventRecord(batch_copied_, stream_));

  BatchView v;
  v.num_tokens = Tp;
  v.num_seqs = Sp;
  v.tokens = d + o_tok;
  v.positions = d + o_pos;
  v.token_seq = d + o_seq;
  v.seq_q_start = d + o_qs;
  v.seq_q_len = d + o_ql;
  v.seq_kv_len = d + o_kl;
  v.max_q_len = max_q;
  v.max_kv_len = max_kv;
  v.num_groups = G;
  for (int g = 0; g < G; ++g) {
    v.groups[g].block_table = d + o_bt[g];
    v.groups[g].slot_mapping = d + o_sm[g];
    v.groups[g].max_blocks = mb[g];
  }
  v.logit_rows = d + o_lr;
  v.num_logit_rows = Rp;

  last_ = LastUpload{};
  last_.tokens = v.tokens;
  last_.n_single = n_single + (Sp - S);
  last_.graphable = graphable;
  last_.key = GraphKey{Tp, Sp, Rp, G, {mb[0], mb[1], mb[2], mb[3]}};
  return v;
}

void CudaBackend::run_forward(const BatchView& b, const std::function<void()>& ops) {
  if (!controls_.graphs || !last_.graphable || last_.tokens != b.tokens) {
    ops();
    flush();
    return;
  }
  GraphEntry& e = graphs_[last_.key];
  const uint64_t epoch = free_epoch();
  if (e.exec && e.epoch == epoch) {
    TS_CUDA(cudaGraphLaunch(e.exec, stream_));
    return;
  }
  if (e.exec) {  // memory it may reference was freed since
    cudaGraphExecDestroy(e.exec);
    e.exec = nullptr;
  }
  if (!e.warmed) {
    e.warmed = true;
    ops();
    flush();
    return;
  }
  cudaGraph_t graph = nullptr;
  TS_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
  try {
    ops();
    flush();
  } catch (...) {
    rope_.on = false;
    lin_.on = false;
    capturing_ = false;
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    throw;
  }
  capturing_ = false;
  TS_CUDA(cudaStreamEndCapture(stream_, &graph));
  cudaError_t ie = cudaGraphInstantiate(&e.exec, graph, 0);
  cudaGraphDestroy(graph);
  TS_CUDA(ie);
  e.epoch = epoch;
  if (free_epoch() != epoch) {  // cannot happen (allocations throw while capturing); be safe
    cudaGraphExecDestroy(e.exec);
    e.exec = nullptr;
    ops();
    flush();
    return;
  }
  TS_CUDA(cudaGraphLaunch(e.exec, stream_));
}

void CudaBackend::attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                            const BatchView& b, int group, float scale, int window, float softcap,
                            Tensor out) {
  flush();
  const auto& g = b.groups[group];
  AttnParams p;
  p.qkv = qkv.data;
  p.qkv_stride = qkv.stride;
  p.qkv_dt = qkv.dtype;
  p.nh = nh;
  p.nkv = nkv;
  p.hd = hd;
  p.k = kv.k;
  p.v = kv.v;
  p.kv_dt = kv.dtype;
  p.block_size = kv.block_size;
  p.positions = b.positions;
  p.token_seq = b.token_seq;
  p.seq_q_start = b.seq_q_start;
  p.seq_q_len = b.seq_q_len;
  p.seq_kv_len = b.seq_kv_len;
  p.block_table = g.block_table;
  p.max_blocks = g.max_blocks;
  p.num_tokens = b.num_tokens;
  p.num_seqs = b.num_seqs;
  p.scale = scale;
  p.window = window;
  p.softcap = softcap;
  p.out = out.data;
  p.out_stride = out.stride;
  p.out_dt = out.dtype;
  if (!attention_fast_supported(p)) {
    attention_generic(p, stream_);
    return;
  }
  const bool any_multi = b.max_q_len > 1;
  const bool any_single = !any_multi || last_.tokens != b.tokens || last_.n_single > 0;
  if (any_multi) {
    const PrefillPlan plan = attention_prefill_plan(p, b.max_q_len, b.max_kv_len);
    float* part = nullptr;
    if (plan.nsplit > 1)
      part = static_cast<float*>(grow(prefill_partials_, plan.partial_floats * sizeof(float),
                                      "attention prefill partials"));
    attention_prefill(p, plan, any_single, part, stream_);
  }
  if (!any_single) return;
  const int nsplit = attention_decode_splits(p, g.max_blocks * kv.block_size);
  if (static_cast<size_t>(nsplit) * kDecodeMaxRep * sizeof(float) >
      static_cast<size_t>(kDecodeKeysPerSplit) * hd * 2) {  // merge weights outgrow the K tile
    attention_generic(p, stream_);
    return;
  }
  const size_t nf = attention_decode_partial_floats(p, nsplit);
  const size_t nc = static_cast<size_t>(b.num_seqs) * nkv;
  float* part = static_cast<float*>(grow(attn_partials_, nf * sizeof(float), "attention partials"));
  int* counters = zeroed_counters(attn_counters_, attn_counter_count_, nc);
  attention_decode(p, nsplit, part, counters, stream_);
}

void CudaBackend::sample(Tensor logits, const SampleBatch& batch, SampleOutput& out) {
  flush();
  const int R = static_cast<int>(batch.rows.size());
  const int V = static_cast<int>(logits.cols);
  if (R > logits.rows)
    fail_arg("sample: " + std::to_string(R) + " parameter rows for " + std::to_string(logits.rows) +
             " logits rows");
  if (logits.dtype != DType::f32) fail_arg("sample: logits must be f32");
  int top_n = 0;
  bool any_lp = false;
  std::vector<SampleRowDev> rows(R);
  int work_rows = 0;
  const auto check_range = [&](int begin, int count, size_t size, const char* what) {
    if (count < 0 || begin < 0 || static_cast<size_t>(begin) + count > size)
      fail_arg(std::string("sample: a row's ") + what + " range is outside the batch's list");
  };
  for (int r = 0; r < R; ++r) {
    const SampleParams& p = batch.rows[r];
    check_range(p.rep_begin, p.rep_count, batch.penalty_ids.size(), "repetition penalty");
    check_range(p.freq_begin, p.freq_count,
                std::min(batch.penalty_ids.size(), batch.penalty_counts.size()),
                "frequency penalty");
    check_range(p.suppress_begin, p.suppress_count, batch.suppress_ids.size(), "suppression");
    SampleRowDev& d = rows[r];
    d.temperature = p.temperature;
    d.top_k = p.top_k;
    d.top_p = p.top_p;
    d.min_p = p.min_p;
    d.seed = p.seed;
    d.step = p.step;
    d.repetition_penalty = p.repetition_penalty;
    d.presence_penalty = p.presence_penalty;
    d.frequency_penalty = p.frequency_penalty;
    d.rep_begin = p.rep_begin;
    d.rep_count = p.rep_count;
    d.freq_begin = p.freq_begin;
    d.freq_count = p.freq_count;
    d.suppress_begin = p.suppress_begin;
    d.suppress_count = p.suppress_count;
    d.want_logprob = p.logprobs || p.top_logprobs > 0;
    d.top_n = std::max(0, p.top_logprobs);
    const bool needs_work =
        p.temperature > 0.f || p.rep_count > 0 || p.freq_count > 0 || p.suppress_count > 0;
    d.work_row = needs_work ? work_rows++ : -1;
    top_n = std::max(top_n, d.top_n);
    any_lp |= d.want_logprob != 0;
  }
  for (int32_t id : batch.penalty_ids)
    if (id < 0 || id >= V)
      fail_arg("sample: penalty id " + std::to_string(id) + " is outside the vocabulary");
  for (int32_t id : batch.suppress_ids)
    if (id < 0 || id >= V)
      fail_arg("sample: suppressed id " + std::to_string(id) + " is outside the vocabulary");

  bool all_plain_greedy = true;
  for (const SampleRowDev& d : rows)
    all_plain_greedy &= d.work_row < 0 && d.temperature <= 0.f && !d.want_logprob && d.top_n == 0;
  if (all_plain_greedy) {  // the common decode case: ids only, many blocks per row
    const size_t ids_bytes = (static_cast<size_t>(R) * 4 + 255) / 256 * 256;
    auto* ws = static_cast<char*>(grow(
        greedy_dev_, ids_bytes + static_cast<size_t>(R) * kGreedyBlocks * 8, "greedy sampling"));
    int* counters = zeroed_counters(greedy_counters_, greedy_counter_count_, R);
    greedy_rows(logits.ptr<const float>(), logits.stride, R, V,
                reinterpret_cast<float*>(ws + ids_bytes), counters, reinterpret_cast<int32_t*>(ws),
                stream_);
    if (sample_host_.size() < static_cast<size_t>(R) * 4)
      sample_host_ =
          PinnedBuffer(std::max<size_t>(4096, 2 * static_cast<size_t>(R) * 4), "sampling staging");
    TS_CUDA(cudaMemcpyAsync(sample_host_.data(), ws, R * 4, cudaMemcpyDeviceToHost, stream_));
    TS_CUDA(cudaStreamSynchronize(stream_));
    out.top_n = 0;
    out.ids.assign(sample_host_.as<int32_t>(), sample_host_.as<int32_t>() + R);
    out.logprobs.clear();
    out.top_ids.clear();
    out.top_logprobs.clear();
    return;
  }
  // Inputs: rows, penalty ids, counts, suppressed ids; outputs: ids, lp, top ids, top lp.
  const size_t n_pid = batch.penalty_ids.size(), n_pc = batch.penalty_counts.size(),
               n_sup = batch.suppress_ids.size();
  auto al = [](size_t b) { return (b + 255) / 256 * 256; };
  const size_t b_rows = al(R * sizeof(SampleRowDev)), b_pid = al(n_pid * 4), b_pc = al(n_pc * 4),
               b_sup = al(n_sup * 4);
  const size_t in_bytes = b_rows + b_pid + b_pc + b_sup;
  const size_t b_ids = al(R * 4), b_lp = al(R * 4), b_tid = al(static_cast<size_t>(R) * top_n * 4);
  const size_t out_bytes = b_ids + b_lp + 2 * b_tid;
  if (sample_host_.size() < in_bytes + out_bytes)
    sample_host_ = PinnedBuffer(2 * (in_bytes + out_bytes), "sampling staging");
  char* h = sample_host_.as<char>();
  std::memcpy(h, rows.data(), R * sizeof(SampleRowDev));
  std::memcpy(h + b_rows, batch.penalty_ids.data(), n_pid * 4);
  std::memcpy(h + b_rows + b_pid, batch.penalty_counts.data(), n_pc * 4);
  std::memcpy(h + b_rows + b_pid + b_pc, batch.suppress_ids.data(), n_sup * 4);
  char* d = static_cast<char*>(sample_dev_.get(in_bytes + out_bytes, "sampling buffers"));
  float* work = nullptr;
  if (work_rows > 0)
    work = static_cast<float*>(
        sample_work_.get(static_cast<size_t>(work_rows) * V * sizeof(float), "sampling work rows"));
  TS_CUDA(cudaMemcpyAsync(d, h, in_bytes, cudaMemcpyHostToDevice, stream_));
  char* dout = d + in_bytes;
  sample_rows(logits.ptr<const float>(), logits.stride, R, V,
              reinterpret_cast<const SampleRowDev*>(d),
              reinterpret_cast<const int32_t*>(d + b_rows),
              reinterpret_cast<const int32_t*>(d + b_rows + b_pid),
              reinterpret_cast<const int32_t*>(d + b_rows + b_pid + b_pc), work,
              reinterpret_cast<int32_t*>(dout), reinterpret_cast<float*>(dout + b_ids),
              reinterpret_cast<int32_t*>(dout + b_ids + b_lp),
              reinterpret_cast<float*>(dout + b_ids + b_lp + b_tid), top_n, stream_);
  // Only what was asked for crosses back.
  char* hout = h + in_bytes;
  const size_t back = any_lp ? out_bytes : b_ids;
  TS_CUDA(cudaMemcpyAsync(hout, dout, back, cudaMemcpyDeviceToHost, stream_));
  TS_CUDA(cudaStreamSynchronize(stream_));
  out.top_n = top_n;
  out.ids.assign(reinterpret_cast<int32_t*>(hout), reinterpret_cast<int32_t*>(hout) + R);
  out.logprobs.clear();
  out.top_ids.assign(static_cast<size_t>(R) * top_n, -1);
  out.top_logprobs.assign(static_cast<size_t>(R) * top_n, -std::numeric_limits<float>::infinity());
  if (any_lp) {
    out.logprobs.assign(R, 0.f);
    const float* lp = reinterpret_cast<const float*>(hout + b_ids);
    const int32_t* tid = reinterpret_cast<const int32_t*>(hout + b_ids + b_lp);
    const float* tlp = reinterpret_cast<const float*>(hout + b_ids + b_lp + b_tid);
    for (int r = 0; r < R; ++r) {
      if (!rows[r].want_logprob) continue;
      out.logprobs[r] = lp[r];
      for (int k = 0; k < rows[r].top_n; ++k) {
        out.top_ids[static_cast<size_t>(r) * top_n + k] = tid[static_cast<size_t>(r) * top_n + k];
        out.top_logprobs[static_cast<size_t>(r) * top_n + k] =
            tlp[static_cast<size_t>(r) * top_n + k];
      }
    }
  }
}

}  // namespace

CudaBackendControls* cuda_controls(ComputeBackend& b) {
  auto* c = dynamic_cast<CudaBackend*>(&b);
  return c ? &c->controls() : nullptr;
}

std::string cuda_device_description() {
  int dev = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess)
    return "unknown GPU";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%.200s, sm_%d%d, %d SMs, %.1f GiB", p.name, p.major, p.minor,
                p.multiProcessorCount, static_cast<double>(p.totalGlobalMem) / (1u << 30));
  return buf;
}

}  // namespace cuda

bool cuda_available() {
  static const bool ok = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
      cudaGetLastError();
      return false;
    }
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return false;
    return p.major >= 9;  // the kernels are built for sm_90a (+ compute_90 PTX)
  }();
  return ok;
}

std::unique_ptr<ComputeBackend> make_cuda_backend() {
  if (!cuda_available()) return nullptr;
  try {
    return std::make_unique<cuda::CudaBackend>();
  } catch (const Error& e) {
    std::fprintf(stderr, "tessera: the CUDA backend could not start: %s\n", e.what());
    return nullptr;
  }
}

}  // namespace tessera
