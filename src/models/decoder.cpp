#include "models/decoder.h"

#include <algorithm>
#include <map>

#include "core/check.h"

namespace tessera {

void DecoderModel::spec_dims_from_info() {
  spec_.hidden = info_.hidden_size;
  spec_.heads = info_.num_heads;
  spec_.kv_heads = info_.num_kv_heads;
  spec_.head_dim = info_.head_dim;
  spec_.intermediate = info_.intermediate_size;
  spec_.vocab = info_.vocab_size;
}

void DecoderModel::finish_load(WeightLoader& w, ModelDir& dir, float norm_add) {
  ModelInfo& in = info_;
  final_norm_ = w.vector("norm.weight", in.hidden_size, norm_add);
  if (!in.tied_embeddings) {
    lm_head_ = w.matrix({"lm_head.weight"}, {in.vocab_size}, in.hidden_size);
  } else if (dir.has("lm_head.weight")) {
    // A redundant copy of the tied embedding: transformers ignores it, and so does tessera.
    dir.take("lm_head.weight");
  }
  dir.check_all_used();
  in.parameter_count = w.parameters();
  in.weight_bytes = static_cast<size_t>(in.parameter_count) * dtype_size(in.weight_dtype);
  finish_setup(in.weight_dtype == DType::f32 ? DType::f32 : DType::bf16);
}

void DecoderModel::finish_setup(DType kv_dtype) {
  std::map<int, int> group_of_window;
  kv_spec_ = KvSpec{};
  kv_spec_.num_kv_heads = spec_.kv_heads;
  kv_spec_.head_dim = spec_.head_dim;
  kv_spec_.dtype = kv_dtype;
  for (auto& layer : layers_) {
    auto it = group_of_window.find(layer.window);
    if (it == group_of_window.end()) {
      it = group_of_window.emplace(layer.window, static_cast<int>(kv_spec_.group_window.size()))
               .first;
      kv_spec_.group_window.push_back(layer.window);
    }
    layer.kv_group = it->second;
    kv_spec_.layer_group.push_back(it->second);
  }
  if (kv_spec_.group_window.size() > static_cast<size_t>(kMaxKvGroups))
    fail(ErrorKind::unsupported, "more than " + std::to_string(kMaxKvGroups) +
                                     " distinct attention windows are not supported");
}

ForwardOutput DecoderModel::forward(const HostBatch& hb, std::span<const KvLayerView> kv) {
  ComputeBackend& be = *backend_;
  const DecoderSpec& s = spec_;
  TS_ASSERT(hb.num_tokens() > 0 && kv.size() == layers_.size());
  const BatchView b = be.upload(hb);
  const int T = b.num_tokens, R = b.num_logit_rows;  // the backend's (possibly padded) sizes
  be.scratch_reset();
  const DType act = be.act_dtype();
  const int qkv_cols = (s.heads + 2 * s.kv_heads) * s.head_dim;
  Tensor x = be.scratch(T, s.hidden, DType::f32);  // the residual stream
  Tensor h = be.scratch(T, s.hidden, act);         // a sublayer's normed input
  Tensor qkv = be.scratch(T, qkv_cols, act);
  Tensor attn = be.scratch(T, static_cast<int64_t>(s.heads) * s.head_dim, act);
  Tensor o = be.scratch(T, s.hidden, act);  // a sublayer's output
  Tensor gu = be.scratch(T, 2LL * s.intermediate, act);
  Tensor a = be.scratch(T, s.intermediate, act);
  Tensor xr = be.scratch(std::max(R, 1), s.hidden, DType::f32);
  Tensor hr = be.scratch(std::max(R, 1), s.hidden, act);
  Tensor lg = be.scratch(std::max(R, 1), s.vocab, DType::f32);
  Tensor ids = be.scratch(std::max(R, 1), 1, DType::i32);
  int32_t* greedy = b.greedy_ids && R > 0 ? ids.ptr<int32_t>() : nullptr;
  const Weight& head = lm_head_ ? *lm_head_ : *embed_;

  be.run_forward(b, [&] {
    be.embed(*embed_, b.tokens, T, s.embed_scale, s.embed_scale_in_weight_dtype, x);
    for (size_t l = 0; l < layers_.size(); ++l) {
      const DecoderLayer& L = layers_[l];
      // Attention: the previous layer's MLP output joins the residual (none before layer 0),
      // the input norm, then q, k, v in one product.
      const DecoderLayer* prev = l > 0 ? &layers_[l - 1] : nullptr;
      const ResidualNorm attn_in{
          x, prev ? &o : nullptr, post_ff_norm(prev), L.input_norm.view, s.eps, h};
      be.norm_linear(attn_in, *L.qkv, optional(L.qkv_bias), qkv);
      be.rope_store_attention(qkv, attention_layer(L), kv[l], b, attn);
      be.linear_prefetch(attn, *L.o, optional(L.o_bias), o, *L.gate_up);
      // MLP: the attention output joins the residual, the pre-feedforward norm, the gated pair.
      const ResidualNorm mlp_in{
          x, &o, s.sandwich_norms ? &L.post_attn_norm.view : nullptr, L.pre_ff_norm.view, s.eps, h};
      be.norm_linear_gated(mlp_in, *L.gate_up, s.act, gu, a);
      be.linear(a, *L.down, nullptr, o);
    }
    if (R == 0) return;  // no logits: the last MLP output is not needed
    // The last MLP output joins the residual, then the final norm and the LM head on the logits
    // rows: in place when every row is one (a decode step), else after gathering them.
    const Tensor* last_post = post_ff_norm(&layers_.back());
    if (b.logit_rows_all) {
      const Tensor xo = o.rows_from(0, R);
      be.norm_lm_head(
          {x.rows_from(0, R), &xo, last_post, final_norm_.view, s.eps, h.rows_from(0, R)}, head,
          s.final_softcap, lg, greedy);
    } else {
      be.add_rms_norm(x, o, last_post, nullptr, s.eps, h);
      be.gather_rows(x, b.logit_rows, R, xr);
      be.norm_lm_head({xr, nullptr, nullptr, final_norm_.view, s.eps, hr}, head, s.final_softcap,
                      lg, greedy);
    }
  });
  return {lg.rows_from(0, R), greedy};
}

const Tensor* DecoderModel::post_ff_norm(const DecoderLayer* l) const {
  return l && spec_.sandwich_norms ? &l->post_ff_norm.view : nullptr;
}

AttentionLayer DecoderModel::attention_layer(const DecoderLayer& L) const {
  AttentionLayer a;
  a.nh = spec_.heads;
  a.nkv = spec_.kv_heads;
  a.hd = spec_.head_dim;
  a.q_norm = optional(L.q_norm);
  a.k_norm = optional(L.k_norm);
  a.eps = spec_.eps;
  a.inv_freq = L.inv_freq.view;
  a.scale = spec_.attn_scale;
  a.window = L.window;
  a.softcap = spec_.attn_softcap;
  a.group = L.kv_group;
  return a;
}

size_t DecoderModel::scratch_bytes(int tokens, int logit_rows) const {
  const DecoderSpec& s = spec_;
  const size_t act = dtype_size(backend_->act_dtype());
  const size_t T = static_cast<size_t>(tokens), R = static_cast<size_t>(std::max(logit_rows, 1));
  const size_t qkv_cols = static_cast<size_t>(s.heads + 2 * s.kv_heads) * s.head_dim;
  size_t b =
      T * s.hidden * 4 + T *
                             (2 * s.hidden + qkv_cols + static_cast<size_t>(s.heads) * s.head_dim +
                              3 * static_cast<size_t>(s.intermediate)) *
                             act;
  b += R * s.hidden * (4 + act) + R * static_cast<size_t>(s.vocab) * 4;
  return b + 64 * 16;  // alignment of each scratch tensor
}

}  // namespace tessera
