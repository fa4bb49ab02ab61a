// The CUDA backend's batches: HostBatch -> pinned staging -> one device buffer (decode batches
// padded to a bucket so that a captured graph can replay them), the CUDA-graph capture and replay
// of decode steps, and the choice of attention kernels for a ragged batch.
#include "backend/cuda/cuda_backend_impl.h"

namespace tessera::cuda {

namespace {

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

}  // namespace

BatchView CudaBackend::upload(const HostBatch& b) {
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
  const bool graphable = tuning_.graphs && all_single && T == S && S <= kMaxGraphSeqs;
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
  check_sampled(b, sampled_.dev_ids ? sampled_.rows : 0);

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
  for (const HostBatch::Sampled& e : b.sampled) h[o_tok + e.token] = -(e.row + 1);

  // Staged on the upload stream (it overlaps the forward still running), then installed into
  // the live buffer on the compute stream, sampled ids included (batch.h): only the install
  // kernel sits between the last sample and this forward.
  auto* d = static_cast<int32_t*>(device_batch(bytes));
  auto* st = static_cast<int32_t*>(grow(batch_stage_, bytes, "batch staging (device)"));
  TS_CUDA(cudaStreamWaitEvent(up_stream_, batch_installed_));  // the last install read st
  TS_CUDA(cudaMemcpyAsync(st, h, bytes, cudaMemcpyHostToDevice, up_stream_));
  TS_CUDA(cudaEventRecord(batch_copied_, up_stream_));
  TS_CUDA(cudaStreamWaitEvent(stream_, batch_copied_));
  install_batch(d, st, off, o_tok, Tp, sampled_.dev_ids, stream_);
  TS_CUDA(cudaEventRecord(batch_installed_, stream_));

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
  // Embeddings' forwards (and bidirectional ones, which are embeddings') run eagerly.
  last_.graphable = graphable && !b.hidden_states && b.causal;
  v.logit_rows_all = b.logits_every_row();  // padded rows then see their own (padding) rows
  v.greedy_ids = b.greedy_ids;
  v.hidden_states = b.hidden_states;
  v.causal = b.causal;
  last_.key = GraphKey{Tp, Sp, Rp, G, {mb[0], mb[1], mb[2], mb[3]}, v.logit_rows_all, v.greedy_ids};
  return v;
}

void CudaBackend::run_forward(const BatchView& b, const std::function<void()>& ops) {
  if (!tuning_.graphs || !last_.graphable || last_.tokens != b.tokens) {
    ops();
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
    return;
  }
  cudaGraph_t graph = nullptr;
  TS_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
  try {
    ops();
  } catch (...) {
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
    return;
  }
  TS_CUDA(cudaGraphLaunch(e.exec, stream_));
}

AttnParams CudaBackend::attn_params(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                                    const BatchView& b, int group, float scale, int window,
                                    float softcap, Tensor out) const {
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
  p.causal = b.causal;
  p.softcap = softcap;
  p.out = out.data;
  p.out_stride = out.stride;
  p.out_dt = out.dtype;
  return p;
}

void CudaBackend::attention(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                            const BatchView& b, int group, float scale, int window, float softcap,
                            Tensor out) {
  run_attention(attn_params(qkv, nh, nkv, hd, kv, b, group, scale, window, softcap, out), b, group,
                nullptr);
}

void CudaBackend::rope_store_attention(Tensor qkv, const AttentionLayer& l, const KvLayerView& kv,
                                       const BatchView& b, Tensor out) {
  const AttnParams p =
      attn_params(qkv, l.nh, l.nkv, l.hd, kv, b, l.group, l.scale, l.window, l.softcap, out);
  const int32_t* slots = b.groups[l.group].slot_mapping;
  const bool store_fused = tuning_.fusions && qk_norm_rope_store_supported(qkv, kv);
  // Every sequence has one new token and the decode kernel runs alone: it also does the rope and
  // the KV store (DecodeRope).
  const int nsplit = attention_decode_splits(p, b.groups[l.group].max_blocks * kv.block_size);
  const bool decode_only = attention_fast_supported(p) && b.max_q_len == 1 &&
                           attention_decode_fits(p, nsplit) && qkv.dtype == DType::bf16 &&
                           kv.dtype == DType::bf16;
  if (store_fused && decode_only) {
    DecodeRope dr;
    dr.on = true;
    dr.q_norm = l.q_norm ? l.q_norm->ptr<const float>() : nullptr;
    dr.k_norm = l.k_norm ? l.k_norm->ptr<const float>() : nullptr;
    dr.eps = l.eps;
    dr.inv_freq = l.inv_freq.ptr<const float>();
    dr.positions = b.positions;
    dr.slots = slots;
    run_attention(p, b, l.group, &dr);
    return;
  }
  if (store_fused) {
    qk_norm_rope_store(qkv, l.nh, l.nkv, l.hd, l.q_norm, l.k_norm, l.eps, b.positions, l.inv_freq,
                       kv, slots, stream_);
  } else {
    qk_norm_rope(qkv, l.nh, l.nkv, l.hd, l.q_norm, l.k_norm, l.eps, b.positions, l.inv_freq);
    kv_store(qkv, l.nh, l.nkv, l.hd, kv, slots);
  }
  run_attention(p, b, l.group, nullptr);
}

void CudaBackend::run_attention(const AttnParams& p, const BatchView& b, int group,
                                const DecodeRope* rope) {
  const auto& g = b.groups[group];
  const bool fast = attention_fast_supported(p);
  const int nsplit = attention_decode_splits(p, g.max_blocks * p.block_size);
  if (!fast) {
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
  if (!attention_decode_fits(p, nsplit)) {
    attention_generic(p, stream_);
    return;
  }
  const size_t nf = attention_decode_partial_floats(p, nsplit);
  const size_t nc = static_cast<size_t>(b.num_seqs) * p.nkv;
  float* part = static_cast<float*>(grow(attn_partials_, nf * sizeof(float), "attention partials"));
  int* counters = zeroed_counters(attn_counters_, attn_counter_count_, nc);
  attention_decode(p, nsplit, part, counters, stream_, rope);
}

}  // namespace tessera::cuda
