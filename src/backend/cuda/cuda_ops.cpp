// The CUDA backend's ops: each plain op is one kernel launch (or cuBLASLt call) on the compute
// stream; each fused op runs its fused kernel where the shapes allow it and otherwise the
// composition that ComputeBackend defines for it (backend.h), so that both give the same results
// within bf16 rounding. Nothing is kept between ops: what a kernel fuses is what the model called.
#include "backend/cuda/cuda_backend_impl.h"

namespace tessera::cuda {

namespace {

// The streaming GEMV's norm prologue for n (GemvFusion::norm): a residual update with y, bf16
// activations, f32 residual and decode-sized rows (1..8). False where it cannot take it.
bool norm_prologue(const ResidualNorm& n, GemvFusion& f) {
  if (!n.y) return false;
  const Tensor& y = *n.y;
  if (y.dtype != DType::bf16 || n.h.dtype != DType::bf16 || n.residual.dtype != DType::f32 ||
      n.residual.rows != y.rows || n.h.rows != y.rows || n.residual.cols != y.cols ||
      n.h.cols != y.cols || y.rows < 1 || y.rows > 8)
    return false;
  f.norm = true;
  f.res = n.residual.ptr<float>();
  f.res_stride = n.residual.stride;
  f.y = y.ptr<const bf16>();
  f.y_stride = y.stride;
  f.w_y = n.w_y ? n.w_y->ptr<const float>() : nullptr;
  f.w_out = n.w_out.ptr<const float>();
  f.eps = n.eps;
  f.h = n.h.ptr<bf16>();
  f.h_stride = n.h.stride;
  return true;
}

}  // namespace

void CudaBackend::embed(const Weight& table, const int32_t* ids, int n, float scale, bool round,
                        Tensor out) {
  if (table.quant.quantized()) {
    embed_quant(static_cast<const CudaQuantWeight&>(table).view(), ids, n, scale, round,
                table.dtype, out, stream_);
    return;
  }
  const auto& w = static_cast<const CudaWeight&>(table);
  cuda::embed(w.data(), w.dtype, w.rows, w.cols, ids, n, scale, round, out, stream_);
}

void CudaBackend::rms_norm(Tensor x, Tensor w, float eps, Tensor out) {
  cuda::rms_norm(x, w, eps, out, stream_);
}

void CudaBackend::add_rms_norm(Tensor residual, Tensor y, const Tensor* w_y, const Tensor* w_out,
                               float eps, Tensor out) {
  cuda::add_rms_norm(residual, y, w_y, w_out, eps, out, stream_);
}

void CudaBackend::linear(Tensor x, const Weight& w, const Tensor* bias, Tensor out) {
  if (linear_parts(x, w, bias, out)) return;
  if (w.quant.quantized()) {
    quant_linear(x, w, bias ? bias->ptr<const float>() : nullptr, out);
    return;
  }
  const auto& cw = static_cast<const CudaWeight&>(w);
  lin().linear(x, cw.data(), cw.dtype, cw.rows, cw.cols, bias ? bias->ptr<const float>() : nullptr,
               out, stream_);
}

// gate_up and the activation as one GEMV (its gated epilogue; gate_up is not written) where the
// shape allows it.
void CudaBackend::linear_gated(Tensor x, const Weight& w, const Tensor* bias, Activation act,
                               Tensor gate_up, Tensor out) {
  GemvFusion f;
  f.gated = true;
  f.act = act;
  if (!fused_gemv(x, w, bias, out, f)) ComputeBackend::linear_gated(x, w, bias, act, gate_up, out);
}

void CudaBackend::qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* q_norm,
                               const Tensor* k_norm, float eps, const int32_t* positions,
                               Tensor inv_freq) {
  cuda::qk_norm_rope(qkv, nh, nkv, hd, q_norm, k_norm, eps, positions, inv_freq, stream_);
}

void CudaBackend::kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
                           const int32_t* slot_mapping) {
  cuda::kv_store(qkv, nh, nkv, hd, kv, slot_mapping, stream_);
}

void CudaBackend::gated_act(Tensor gate_up, Activation act, Tensor out) {
  cuda::gated_act(gate_up, act, out, stream_);
}

void CudaBackend::gather_rows(Tensor x, const int32_t* rows, int n, Tensor out) {
  cuda::gather_rows(x, rows, n, out, stream_);
}

void CudaBackend::softcap(Tensor x, float cap) {
  cuda::softcap(x, cap, stream_);
}

void CudaBackend::argmax_rows(Tensor logits, int32_t* ids) {
  if (logits.rows == 0) return;
  if (logits.dtype != DType::f32) fail_arg("argmax_rows: logits must be f32");
  const int R = static_cast<int>(logits.rows), V = static_cast<int>(logits.cols);
  auto* part = static_cast<float*>(
      grow(greedy_dev_, static_cast<size_t>(R) * kGreedyBlocks * 8, "greedy partials"));
  int* counters = zeroed_counters(greedy_counters_, greedy_counter_count_, R);
  greedy_rows(logits.ptr<const float>(), logits.stride, R, V, part, counters, ids, stream_);
}

bool CudaBackend::fused_gemv(Tensor x, const Weight& w, const Tensor* bias, Tensor out,
                             GemvFusion f, int32_t* greedy_ids) {
  if (!w.parts.empty()) return false;  // the composition, whose linear() covers the parts
  const auto& cw = static_cast<const CudaWeight&>(w);
  LinearOps& ops = lin();
  if (!tuning_.fusions || tuning_.linear != LinearPath::automatic) return false;
  const bool quant = w.quant.quantized();
  if (quant ? !quant_gemv_fits(x, static_cast<const CudaQuantWeight&>(w).view(), out, &f, ops.sms())
            : !ops.gemv_fusable(x, cw.data(), cw.dtype, cw.rows, cw.cols, out, f))
    return false;
  if (f.norm) f.counter = zeroed_counters(fuse_counter_, fuse_counter_count_, 1);
  if (greedy_ids) {  // an LM head (gemv_fusable took f32 logits)
    auto* part = static_cast<float*>(grow(argmax_dev_, kGemvArgmaxMaxBlocks * 8, "argmax"));
    f.amax_id = greedy_ids;
    f.amax_part = part;
    f.amax_count = zeroed_counters(argmax_counter_, argmax_counter_count_, 1);
  }
  if (quant) {
    launch_quant_gemv(x, static_cast<const CudaQuantWeight&>(w).view(),
                      bias ? bias->ptr<const float>() : nullptr, out, &f, stream_, ops.sms());
    return true;
  }
  ops.linear(x, cw.data(), cw.dtype, cw.rows, cw.cols, bias ? bias->ptr<const float>() : nullptr,
             out, stream_, &f);
  return true;
}

void CudaBackend::norm_linear(const ResidualNorm& n, const Weight& w, const Tensor* bias,
                              Tensor out) {
  GemvFusion f;
  if (norm_prologue(n, f) && fused_gemv(n.h, w, bias, out, f)) return;
  ComputeBackend::norm_linear(n, w, bias, out);
}

void CudaBackend::norm_linear_gated(const ResidualNorm& n, const Weight& w_gate_up, Activation act,
                                    Tensor gate_up, Tensor out) {
  GemvFusion f;
  f.gated = true;
  f.act = act;
  if (norm_prologue(n, f) && fused_gemv(n.h, w_gate_up, nullptr, out, f)) return;
  residual_norm(n);
  linear_gated(n.h, w_gate_up, nullptr, act, gate_up, out);  // the gated epilogue alone
}

// At M = 1 the final norm rides on the LM head's streaming GEMV, which also picks the greedy id
// (one launch for norm, head and pick); elsewhere the norm kernel, cuBLASLt and argmax_rows.
void CudaBackend::norm_lm_head(const ResidualNorm& n, const Weight& w, float cap, Tensor logits,
                               int32_t* greedy_ids) {
  GemvFusion f;
  if (cap <= 0 && norm_prologue(n, f) &&
      fused_gemv(n.h, w, nullptr, logits, f, logits.rows == 1 ? greedy_ids : nullptr)) {
    if (greedy_ids && logits.rows != 1) argmax_rows(logits, greedy_ids);
    return;
  }
  ComputeBackend::norm_lm_head(n, w, cap, logits, greedy_ids);
}

void CudaBackend::linear_prefetch(Tensor x, const Weight& w, const Tensor* bias, Tensor out,
                                  const Weight& next) {
  if (w.quant.quantized() || !w.parts.empty()) return linear(x, w, bias, out);
  const auto& cw = static_cast<const CudaWeight&>(w);
  const auto& nw = static_cast<const CudaWeight&>(next);
  L2Prefetch pf;
  if (tuning_.fusions && nw.dtype == DType::bf16 && !next.quant.quantized() && next.parts.empty())
    pf = gated_prefetch(nw.data(), nw.rows, nw.cols, linear_->sms());
  lin().linear(x, cw.data(), cw.dtype, cw.rows, cw.cols, bias ? bias->ptr<const float>() : nullptr,
               out, stream_, nullptr, pf);
}

}  // namespace tessera::cuda
