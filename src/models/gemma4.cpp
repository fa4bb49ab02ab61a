// Gemma 4 text models: the forward (gemma4.h says what sets the architecture apart; the config
// and tensors are read in gemma4_load.cpp). ref: transformers models/gemma4/modeling_gemma4.py.
// Unlike Gemma 3's forward, each layer's output is added to the residual within the layer: the
// layer ends by scaling the whole residual (layer_scalar), so nothing is left pending for the
// next layer's norm.
#include <cmath>

#include "core/check.h"
#include "models/gemma4.h"

namespace tessera {
namespace {

using gemma4::LayerExtras;

class Gemma4Model final : public DecoderModel {
 public:
  Gemma4Model(ModelDir& dir, ComputeBackend& backend, const LoadOptions& opts)
      : DecoderModel(backend) {
    // Its ops scale, act_mul, moe_route and moe_experts have only the interface's host
    // round-trip defaults so far, which a captured CUDA forward cannot run.
    if (backend.device() != Device::cpu)
      fail(ErrorKind::unsupported, dir.config_path() +
                                       ": Gemma 4 runs on the CPU backend only so far (issue #31); "
                                       "use --device cpu");
    gemma4::read_config(ConfigReader{dir.config(), dir.config_path()}, dir, info_, cfg_, g_);
    load(dir, opts);
  }

  size_t scratch_bytes(int tokens, int logit_rows) const override {
    const size_t act = dtype_size(backend_->act_dtype()), T = static_cast<size_t>(tokens);
    const size_t LP = static_cast<size_t>(cfg_.layers) * g_.ple_dim, H = cfg_.hidden,
                 E = g_.experts, k = g_.top_k;
    size_t b = DecoderModel::scratch_bytes(tokens, logit_rows);
    b += T * (LP * (4 + act) + 2 * g_.ple_dim * act);                    // per-layer inputs
    if (E > 0) b += T * (H * (4 + 4 * act) + E * act + k * 8) + 64 * 8;  // MoE
    return b + 64 * 8;
  }

  // ref: Gemma4TextModel.forward, Gemma4TextDecoderLayer.forward, Gemma4ForCausalLM.forward
  ForwardOutput forward(const HostBatch& hb, std::span<const KvLayerView> kv) override {
    ForwardPass f = begin_forward(hb, kv);
    const Scratch s = take_scratch(f.b.num_tokens);
    backend().run_forward(f.b, [&] {
      ComputeBackend& be = f.be;
      const Activations& a = f.a;
      const float eps = cfg_.eps;
      // x = embed_tokens(ids) * sqrt(hidden), the scale in the weight dtype  [T, hidden]
      embed(f, *w_.embed_tokens, g_.embed_scale, /*round_to_table_dtype=*/true);
      if (g_.ple_dim > 0) per_layer_inputs(f, s);
      for (size_t l = 0; l < w_.layers.size(); ++l) {
        const LayerWeights& L = w_.layers[l];
        const LayerExtras& e = x_.layers[l];
        // h = input_layernorm(x); attn_out = self_attn(h)  [T, hidden]
        const ResidualNorm attn_in = add_norm(f, nullptr, nullptr, L.input_layernorm);
        attention(f, attn_in, L, kv, static_cast<int>(l));
        // x += post_attention_layernorm(attn_out); h = pre_feedforward_layernorm(x);
        // mlp_out = down_proj(gelu(gate_proj(h)) * up_proj(h))  [T, hidden]
        const ResidualNorm mlp_in =
            add_norm(f, &a.out, &L.post_attention_layernorm, L.pre_feedforward_layernorm);
        const int I = g_.intermediate[l];
        const Tensor gated = a.gated.cols_from(0, I);
        be.norm_linear_gated(mlp_in, *L.gate_up, Activation::gelu_tanh,
                             a.gate_up.cols_from(0, 2LL * I), gated);
        be.linear(gated, *L.down, nullptr, a.out);
        if (g_.experts > 0) {
          moe(f, s, e);
          // x += post_feedforward_layernorm(post_feedforward_layernorm_1(mlp_out) + experts),
          // that norm already applied by moe()
          be.add_rms_norm(a.x, s.combined, nullptr, nullptr, eps, a.h);
        } else {
          // x += post_feedforward_layernorm(mlp_out)
          be.add_rms_norm(a.x, a.out, &L.post_feedforward_layernorm.view, nullptr, eps, a.h);
        }
        if (g_.ple_dim > 0) {
          // x += post_per_layer_input_norm(per_layer_projection(
          //        gelu(per_layer_input_gate(x)) * per_layer_input[l]))
          be.linear(a.x, *e.ple_gate, nullptr, s.ple_gate);
          be.act_mul(s.ple_gate, s.ple.cols_from(int64_t{g_.ple_dim} * l, g_.ple_dim),
                     Activation::gelu_tanh, s.ple_gate);
          be.linear(s.ple_gate, *e.ple_proj, nullptr, a.out);
          be.add_rms_norm(a.x, a.out, &e.ple_norm.view, nullptr, eps, a.h);
        }
        // x *= layer_scalar
        if (e.layer_scalar != 1.0f) be.scale(a.x, e.layer_scalar);
      }
      // logits = softcap(lm_head(norm(x))), the head tied to embed_tokens unless untied
      lm_head(f, nullptr, nullptr, w_.norm, w_.head(), g_.final_softcap);
    });
    return f.output();
  }

 protected:
  DecoderWeights load_weights(WeightLoader& w, ModelDir& dir) override {
    return gemma4::load_weights(w, dir, *backend_, cfg_, g_, info_.tied_embeddings, x_);
  }

 private:
  // The activations beyond ForwardPass's, taken in this order on every forward.
  struct Scratch {
    Tensor ple, ple_proj, ple_gate;               // [T, layers P] f32, [T, layers P], [T, P]
    Tensor router_in, scores, weights, ids;       // [T, hidden], [T, E], [T, k] f32, [T, k] i32
    Tensor expert_in, expert_out, sum, combined;  // [T, hidden]; sum f32
  };

  Scratch take_scratch(int T) {
    ComputeBackend& be = *backend_;
    const DType act = be.act_dtype();
    const int64_t LP = int64_t{cfg_.layers} * g_.ple_dim, H = cfg_.hidden;
    Scratch s;
    if (g_.ple_dim > 0) {
      s.ple = be.scratch(T, LP, DType::f32);
      s.ple_proj = be.scratch(T, LP, act);
      s.ple_gate = be.scratch(T, g_.ple_dim, act);
    }
    if (g_.experts > 0) {
      s.router_in = be.scratch(T, H, act);
      s.scores = be.scratch(T, g_.experts, act);
      s.weights = be.scratch(T, g_.top_k, DType::f32);
      s.ids = be.scratch(T, g_.top_k, DType::i32);
      s.expert_in = be.scratch(T, H, act);
      s.expert_out = be.scratch(T, H, act);
      s.sum = be.scratch(T, H, DType::f32);
      s.combined = be.scratch(T, H, act);
    }
    return s;
  }

  // ref: Gemma4TextModel.get_per_layer_inputs, project_per_layer_inputs. From the scaled
  // embeddings x [T, hidden]: s.ple [T, layers * P] = (per_layer_projection_norm(
  // per_layer_model_projection(x) * hidden^-0.5) + embed_tokens_per_layer(ids) * sqrt(P))
  // * 2^-0.5, the norm per [P] slice.
  void per_layer_inputs(ForwardPass& f, const Scratch& s) {
    ComputeBackend& be = f.be;
    const int64_t T = f.b.num_tokens, P = g_.ple_dim, rows = T * cfg_.layers;
    TS_ASSERT(s.ple.stride == s.ple.cols && s.ple_proj.stride == s.ple_proj.cols);
    be.embed(*x_.ple_embed, f.b.tokens, f.b.num_tokens, std::sqrt(static_cast<float>(P)),
             /*round_to_table_dtype=*/true, s.ple);
    be.linear(f.a.x, *x_.ple_model_proj, nullptr, s.ple_proj);
    be.scale(s.ple_proj, static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg_.hidden))));
    // The same memory as [T * layers, P]: one row per (token, layer).
    const Tensor proj{s.ple_proj.data, s.ple_proj.dtype, rows, P, P};
    const Tensor ple{s.ple.data, DType::f32, rows, P, P};
    be.rms_norm(proj, x_.ple_proj_norm.view, cfg_.eps, proj);
    be.add_rms_norm(ple, proj, nullptr, nullptr, cfg_.eps, proj);  // ple += proj
    be.scale(s.ple, static_cast<float>(std::sqrt(0.5)));
  }

  // ref: Gemma4TextAttention.forward. Over attn_in.h: q (and, unless the layer shares another's
  // cache, k and v) projections; q/k RMSNorm with weights, v without; rope at the layer type's
  // frequencies; attention with scale 1 over the cache of the layer's KV source; o_proj into
  // f.a.out.
  void attention(ForwardPass& f, const ResidualNorm& attn_in, const LayerWeights& L,
                 std::span<const KvLayerView> kv, int l) {
    ComputeBackend& be = f.be;
    const Activations& a = f.a;
    const DecoderConfig& c = cfg_;
    const int src = g_.kv_source[l], hd = c.head_dim;
    const bool shared = src != l;
    // KV-shared: q alone [T, nh hd] in qkv's first columns.
    be.norm_linear(attn_in, *L.qkv, nullptr,
                   shared ? a.qkv.cols_from(0, int64_t{c.heads} * hd) : a.qkv);
    if (!shared) {
      for (int j = 0; j < c.kv_heads; ++j) {  // v_norm, per kv head  [T, hd] each
        const Tensor v = a.qkv.cols_from(int64_t{c.heads + c.kv_heads + j} * hd, hd);
        be.rms_norm(v, x_.ones.view, c.eps, v);
      }
    }
    const Tensor* k_norm = shared ? nullptr : &L.k_norm.view;
    be.qk_norm_rope(a.qkv, c.heads, shared ? 0 : c.kv_heads, hd, &L.q_norm.view, k_norm, c.eps,
                    f.b.positions, L.inv_freq.view);
    if (!shared)
      be.kv_store(a.qkv, c.heads, c.kv_heads, hd, kv[l], f.b.groups[L.kv_group].slot_mapping);
    be.attention(a.qkv, c.heads, c.kv_heads, hd, kv[src], f.b, L.kv_group, c.attn_scale, L.window,
                 0.0f, a.attn);
    be.linear(a.attn, *L.o, nullptr, a.out);
  }

  // ref: Gemma4TextDecoderLayer.forward's MoE branch, Gemma4TextRouter, Gemma4TextExperts. With
  // x the residual after attention and f.a.out the dense MLP's output:
  // s.combined = post_feedforward_layernorm(post_feedforward_layernorm_1(mlp_out)
  //              + post_feedforward_layernorm_2(experts(pre_feedforward_layernorm_2(x))))
  void moe(ForwardPass& f, const Scratch& s, const LayerExtras& e) {
    ComputeBackend& be = f.be;
    const Activations& a = f.a;
    const float eps = cfg_.eps;
    // router: proj(norm(x) * scale * hidden^-0.5) [T, E]; softmax, top-k, renormalised, scaled
    be.rms_norm(a.x, e.router_scale.view, eps, s.router_in);
    be.linear(s.router_in, *e.router, nullptr, s.scores);
    be.moe_route(s.scores, g_.top_k, &e.per_expert_scale.view, s.weights, s.ids);
    be.rms_norm(a.x, e.pre_ff_norm_2.view, eps, s.expert_in);
    be.moe_experts(s.expert_in, e.gate_up_ptrs, e.down_ptrs, Activation::gelu_tanh, s.weights,
                   s.ids, s.expert_out);
    be.rms_norm(a.out, e.post_ff_norm_1.view, eps, s.sum);
    const DeviceArray& post_ff = w_.layers[&e - x_.layers.data()].post_feedforward_layernorm;
    be.add_rms_norm(s.sum, s.expert_out, &e.post_ff_norm_2.view, &post_ff.view, eps, s.combined);
  }

  gemma4::Config g_;
  gemma4::Extras x_;
};

}  // namespace

std::unique_ptr<Model> make_gemma4(ModelDir& dir, ComputeBackend& backend,
                                   const LoadOptions& opts) {
  return std::make_unique<Gemma4Model>(dir, backend, opts);
}

}  // namespace tessera
