#include "models/blocks.h"

#include <algorithm>

#include "core/check.h"

namespace tessera {
namespace {

const Tensor* optional(const DeviceArray& a) {
  return a.buffer ? &a.view : nullptr;
}

// The constants rope_store_attention needs for layer L.
AttentionLayer attention_layer(const DecoderConfig& c, const LayerWeights& L) {
  AttentionLayer a;
  a.nh = c.heads;
  a.nkv = c.kv_heads;
  a.hd = c.head_dim;
  a.q_norm = optional(L.q_norm);
  a.k_norm = optional(L.k_norm);
  a.eps = c.eps;
  a.inv_freq = L.inv_freq.view;
  a.scale = c.attn_scale;
  a.window = L.window;
  a.softcap = c.attn_softcap;
  a.group = L.kv_group;
  return a;
}

}  // namespace

ForwardPass begin_forward(ComputeBackend& be, const DecoderConfig& c, const HostBatch& hb,
                          std::span<const KvLayerView> kv) {
  TS_ASSERT(hb.num_tokens() > 0 && kv.size() == static_cast<size_t>(c.layers));
  ForwardPass f{be, c, be.upload(hb), {}};
  // A bidirectional model's attention is bidirectional in every batch (warm-ups, `tessera
  // logits`), not only in those its scheduler marks; the flag is read on the host.
  if (c.bidirectional) f.b.causal = false;
  const int T = f.b.num_tokens, R = std::max(f.b.num_logit_rows, 1);
  be.scratch_reset();
  const DType act = be.act_dtype();
  Activations& a = f.a;
  a.x = be.scratch(T, c.hidden, DType::f32);
  a.h = be.scratch(T, c.hidden, act);
  a.qkv = be.scratch(T, (c.heads + 2 * c.kv_heads) * c.head_dim, act);
  a.attn = be.scratch(T, static_cast<int64_t>(c.heads) * c.head_dim, act);
  a.out = be.scratch(T, c.hidden, act);
  a.gate_up = be.scratch(T, 2LL * c.intermediate, act);
  a.gated = be.scratch(T, c.intermediate, act);
  a.x_rows = be.scratch(R, c.hidden, DType::f32);
  a.h_rows = be.scratch(R, c.hidden, act);
  a.logits = be.scratch(R, c.vocab, DType::f32);
  a.ids = be.scratch(R, 1, DType::i32);
  if (f.b.greedy_ids && f.b.num_logit_rows > 0) f.greedy_ids = a.ids.ptr<int32_t>();
  return f;
}

size_t activation_bytes(const DecoderConfig& c, DType act_dtype, int tokens, int logit_rows) {
  const size_t act = dtype_size(act_dtype);
  const size_t T = static_cast<size_t>(tokens), R = static_cast<size_t>(std::max(logit_rows, 1));
  const size_t qkv_cols = static_cast<size_t>(c.heads + 2 * c.kv_heads) * c.head_dim;
  size_t b =
      T * c.hidden * 4 + T *
                             (2 * c.hidden + qkv_cols + static_cast<size_t>(c.heads) * c.head_dim +
                              3 * static_cast<size_t>(c.intermediate)) *
                             act;
  b += R * c.hidden * (4 + act) + R * static_cast<size_t>(c.vocab) * 4;
  return b + 64 * 16;  // alignment of each scratch tensor
}

void embed(ForwardPass& f, const Weight& embed_tokens, float scale, bool round_to_table_dtype) {
  f.be.embed(embed_tokens, f.b.tokens, f.b.num_tokens, scale, round_to_table_dtype, f.a.x);
}

ResidualNorm add_norm(const ForwardPass& f, const Tensor* y, const DeviceArray* w_y,
                      const DeviceArray& w) {
  return {f.a.x, y, y && w_y ? &w_y->view : nullptr, w.view, f.c.eps, f.a.h};
}

const Tensor& attention_block(ForwardPass& f, const ResidualNorm& attn_in, const LayerWeights& L,
                              const KvLayerView& kv) {
  const Activations& a = f.a;
  f.be.norm_linear(attn_in, *L.qkv, optional(L.qkv_bias), a.qkv);
  f.be.rope_store_attention(a.qkv, attention_layer(f.c, L), kv, f.b, a.attn);
  f.be.linear_prefetch(a.attn, *L.o, optional(L.o_bias), a.out, *L.gate_up);
  return a.out;
}

const Tensor& gated_mlp(ForwardPass& f, const ResidualNorm& mlp_in, const LayerWeights& L,
                        Activation act) {
  const Activations& a = f.a;
  f.be.norm_linear_gated(mlp_in, *L.gate_up, act, a.gate_up, a.gated);
  f.be.linear(a.gated, *L.down, nullptr, a.out);
  return a.out;
}

void lm_head(ForwardPass& f, const Tensor& y, const DeviceArray* w_y, const DeviceArray& norm,
             const Weight& head, float softcap) {
  lm_head(f, &y, w_y, norm, head, softcap);
}

void lm_head(ForwardPass& f, const Tensor* y, const DeviceArray* w_y, const DeviceArray& norm,
             const Weight& head, float softcap) {
  const int R = f.b.num_logit_rows;
  const Activations& a = f.a;
  const Tensor* w_y_view = y && w_y ? &w_y->view : nullptr;
  const float eps = f.c.eps;
  if (f.b.hidden_states) {
    // Embeddings: the residual add and the final norm on every row, left in a.h; then the logits
    // rows as below, from the updated residual.
    if (y) {
      f.be.add_rms_norm(a.x, *y, w_y_view, &norm.view, eps, a.h);
    } else {
      f.be.rms_norm(a.x, norm.view, eps, a.h);
    }
    if (R == 0) return;
    f.be.gather_rows(a.x, f.b.logit_rows, R, a.x_rows);
    f.be.norm_lm_head({a.x_rows, nullptr, nullptr, norm.view, eps, a.h_rows}, head, softcap,
                      a.logits, f.greedy_ids);
    return;
  }
  if (R == 0) return;  // no logits: the last layer's output is not needed
  if (f.b.logit_rows_all) {
    // Every row is a logits row, in order: the residual add, the final norm and the head in one
    // op on the first R rows.
    const Tensor y_rows = y ? y->rows_from(0, R) : Tensor{};
    f.be.norm_lm_head(
        {a.x.rows_from(0, R), y ? &y_rows : nullptr, w_y_view, norm.view, eps, a.h.rows_from(0, R)},
        head, softcap, a.logits, f.greedy_ids);
  } else {
    // The residual add on every row, then the logits rows gathered, normed and projected.
    if (y) f.be.add_rms_norm(a.x, *y, w_y_view, nullptr, eps, a.h);
    f.be.gather_rows(a.x, f.b.logit_rows, R, a.x_rows);
    f.be.norm_lm_head({a.x_rows, nullptr, nullptr, norm.view, eps, a.h_rows}, head, softcap,
                      a.logits, f.greedy_ids);
  }
}

}  // namespace tessera
