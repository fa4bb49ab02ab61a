// Gemma 4's config.json and tensors (gemma4.h). ref: transformers configuration_gemma4.py
// (Gemma4TextConfig.__post_init__) and modeling_gemma4.py (the modules' __init__).
#include <cmath>

#include "core/check.h"
#include "models/gemma4.h"

namespace tessera::gemma4 {
namespace {

// A softcap key: absent or null, none; else a finite number >= 0.
float softcap_key(const ConfigReader& c, const char* key) {
  const double v = c.get_float(key, 0.0);
  if (!(v >= 0) || !std::isfinite(v))
    c.bad(key, "must be a finite number >= 0 (0 or null: no capping)");
  return static_cast<float>(v);
}

// The global layers' head shape: per_layer_config's overrides (as transformers 5 may write
// them), else global_head_dim (default 512) and, with attention_k_eq_v,
// num_global_key_value_heads. tessera's KV pool holds one head shape for every layer.
void check_global_heads(const ConfigReader& c, const ModelInfo& in, bool k_eq_v) {
  auto need = [&](const char* key, int64_t v, int64_t want) {
    if (v != want)
      fail(ErrorKind::unsupported,
           c.file + ": " + key + " = " + std::to_string(v) + " differs from the sliding layers' " +
               std::to_string(want) +
               "; global layers of another head shape are not supported yet (issue #31)");
  };
  if (c.j.contains("per_layer_config") && c.j["per_layer_config"].is_object()) {
    for (const auto& [layer, o] : c.j["per_layer_config"].items()) {
      if (!o.is_object()) c.bad("per_layer_config", "entries must be objects");
      ConfigReader r{o, c.file};
      need("per_layer_config.head_dim", r.get_int("head_dim", in.head_dim), in.head_dim);
      need("per_layer_config.num_key_value_heads",
           r.get_int("num_key_value_heads", in.num_kv_heads), in.num_kv_heads);
    }
    return;
  }
  need("global_head_dim", c.get_int("global_head_dim", 512), in.head_dim);
  if (k_eq_v && c.has("num_global_key_value_heads"))
    need("num_global_key_value_heads", c.get_int("num_global_key_value_heads"), in.num_kv_heads);
}

// transformers' defaults when the config has no rope_parameters.
RopeParams default_rope(const std::string& type) {
  RopeParams p;
  if (type == "sliding_attention") {
    p.theta = 10000.0;
  } else {
    p.type = "proportional";
    p.theta = 1000000.0;
    p.partial_rotary_factor = 0.25;
  }
  return p;
}

}  // namespace

void read_config(const ConfigReader& c, const ModelDir& dir, ModelInfo& in, DecoderConfig& s,
                 Config& g) {
  in.model_type = c.get_string("model_type", "gemma4_text");
  ConfigDefaults d;  // transformers' Gemma4TextConfig defaults
  d.num_kv_heads = 4;
  d.head_dim = 256;
  d.vocab_size = 262144;
  d.max_position_embeddings = 131072;
  d.tie_word_embeddings = true;
  d.bos_token_id = 2;
  d.pad_token_id = 0;
  read_common_config(c, dir, d, in);
  if (c.get_bool("attention_bias", false))
    fail(ErrorKind::unsupported, c.file + ": attention_bias=true is not supported for Gemma 4");
  const std::string act =
      c.get_string("hidden_activation", c.get_string("hidden_act", "gelu_pytorch_tanh"));
  if (act != "gelu_pytorch_tanh" && act != "gelu_tanh")
    fail(ErrorKind::unsupported, c.file + ": hidden_activation '" + act + "' is not supported");
  // "vision" only changes the mask around image tokens, which a text prompt has none of.
  if (c.get_string("use_bidirectional_attention", "") == "all")
    fail(ErrorKind::unsupported,
         c.file + ": use_bidirectional_attention \"all\" is not supported for Gemma 4");
  const bool k_eq_v = c.get_bool("attention_k_eq_v", false);
  if (k_eq_v)
    fail(ErrorKind::unsupported,
         c.file + ": attention_k_eq_v=true is not supported yet (issue #31)");
  check_global_heads(c, in, k_eq_v);

  // Layer types: listed, or every sixth layer global; the last layer is always global.
  in.sliding_window = c.get_int("sliding_window", 512);
  if (in.sliding_window <= 0) c.bad("sliding_window", "must be positive");
  in.layer_types = read_layer_types(c, in.num_layers);
  if (in.layer_types.empty())
    for (int i = 0; i < in.num_layers; ++i)
      in.layer_types.push_back((i + 1) % 6 ? "sliding_attention" : "full_attention");
  in.layer_types.back() = "full_attention";

  s = decoder_dims(in);
  s.eps = static_cast<float>(c.get_positive("rms_norm_eps", 1e-6));
  s.attn_scale = 1.0f;  // Gemma4TextAttention.scaling: q and k are RMS-normed
  s.sandwich_norms = true;
  s.qk_norm = true;
  s.norm_add = 0.0f;  // Gemma4RMSNorm: x * w
  for (const std::string& type : in.layer_types) {
    s.window.push_back(type == "sliding_attention" ? in.sliding_window : 0);
    s.rope.push_back(c.has("rope_parameters") ? rope_params_for(c, type, 10000.0, 0.0)
                                              : default_rope(type));
  }

  g.ple_dim = c.get_int("hidden_size_per_layer_input", 256);
  if (g.ple_dim < 0) c.bad("hidden_size_per_layer_input", "must be >= 0");
  g.ple_vocab = c.get_int("vocab_size_per_layer_input", 262144);
  if (g.ple_dim > 0 && g.ple_vocab < in.vocab_size)
    c.bad("vocab_size_per_layer_input", "must be at least vocab_size");
  g.num_kv_shared = c.get_int("num_kv_shared_layers", 0);
  if (g.num_kv_shared < 0 || g.num_kv_shared >= in.num_layers)
    c.bad("num_kv_shared_layers", "must be in [0, num_hidden_layers)");
  g.double_wide_mlp = c.get_bool("use_double_wide_mlp", false);
  if (c.get_bool("enable_moe_block", false)) {
    g.experts = c.get_int("num_experts");
    g.top_k = c.get_int("top_k_experts");
    g.expert_intermediate = c.get_int("moe_intermediate_size");
    if (g.experts <= 0) c.bad("num_experts", "must be positive");
    if (g.top_k <= 0 || g.top_k > g.experts) c.bad("top_k_experts", "must be in [1, num_experts]");
    if (g.expert_intermediate <= 0) c.bad("moe_intermediate_size", "must be positive");
  }
  g.final_softcap = softcap_key(c, "final_logit_softcapping");
  g.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(in.hidden_size)));

  // KV sharing (Gemma4TextAttention.__init__): layers from first_shared on read the cache of
  // the last earlier layer of their type; their MLP is twice as wide with use_double_wide_mlp.
  const int first_shared = in.num_layers - g.num_kv_shared;
  for (int i = 0; i < in.num_layers; ++i) {
    int src = i;
    if (g.num_kv_shared > 0 && i >= first_shared) {
      src = -1;
      for (int j = first_shared - 1; j >= 0 && src < 0; --j)
        if (in.layer_types[j] == in.layer_types[i]) src = j;
      if (src < 0)
        c.bad("num_kv_shared_layers", "leaves layer " + std::to_string(i) +
                                          " no earlier layer of its type to share the cache of");
    }
    g.kv_source.push_back(src);
    const bool wide = g.double_wide_mlp && g.num_kv_shared > 0 && i >= first_shared;
    g.intermediate.push_back(in.intermediate_size * (wide ? 2 : 1));
  }
  // The activations are sized for the widest MLP.
  for (int w : g.intermediate) s.intermediate = std::max(s.intermediate, w);
}

DecoderWeights load_weights(WeightLoader& w, ModelDir& dir, ComputeBackend& be,
                            const DecoderConfig& c, const Config& g, bool tied, Extras& x) {
  const int64_t H = c.hidden, hd = c.head_dim, q = int64_t{c.heads} * hd,
                kv = int64_t{c.kv_heads} * hd, P = g.ple_dim, L = c.layers;
  DecoderWeights d;
  d.embed_tokens = w.matrix({"embed_tokens.weight"}, {c.vocab}, H);
  if (P > 0) {
    x.ple_embed = w.matrix({"embed_tokens_per_layer.weight"}, {g.ple_vocab}, L * P);
    x.ple_model_proj = w.matrix({"per_layer_model_projection.weight"}, {L * P}, H);
    x.ple_proj_norm = w.vector("per_layer_projection_norm.weight", P);
  }
  x.ones = be.upload_f32(std::vector<float>(static_cast<size_t>(hd), 1.0f), "v_norm ones");
  for (int i = 0; i < c.layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    const bool shared = g.kv_source[i] != i;
    const int64_t I = g.intermediate[i];
    LayerWeights Lw;
    LayerExtras e;
    Lw.input_layernorm = w.vector(p + "input_layernorm.weight", H);
    Lw.post_attention_layernorm = w.vector(p + "post_attention_layernorm.weight", H);
    Lw.pre_feedforward_layernorm = w.vector(p + "pre_feedforward_layernorm.weight", H);
    Lw.post_feedforward_layernorm = w.vector(p + "post_feedforward_layernorm.weight", H);
    Lw.q_norm = w.vector(p + "self_attn.q_norm.weight", hd);
    if (shared) {
      // transformers ignores a shared layer's k/v tensors when a checkpoint has them.
      for (const char* t : {"k_proj", "v_proj", "k_norm", "v_norm"})
        if (dir.has(p + "self_attn." + t + ".weight")) dir.take(p + "self_attn." + t + ".weight");
      Lw.qkv = w.matrix({p + "self_attn.q_proj.weight"}, {q}, H);
    } else {
      Lw.k_norm = w.vector(p + "self_attn.k_norm.weight", hd);
      Lw.qkv = w.matrix({p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight",
                         p + "self_attn.v_proj.weight"},
                        {q, kv, kv}, H);
    }
    Lw.o = w.matrix({p + "self_attn.o_proj.weight"}, {H}, q);
    Lw.gate_up = w.matrix({p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"}, {I, I}, H);
    Lw.down = w.matrix({p + "mlp.down_proj.weight"}, {H}, I);
    Lw.window = c.window[i];
    Lw.inv_freq = be.upload_f32(rope_inv_freq(c.rope[i], c.head_dim), "rope inv_freq");
    if (w.has(p + "layer_scalar")) e.layer_scalar = w.scalar(p + "layer_scalar");
    if (P > 0) {
      e.ple_gate = w.matrix({p + "per_layer_input_gate.weight"}, {P}, H);
      e.ple_proj = w.matrix({p + "per_layer_projection.weight"}, {H}, P);
      e.ple_norm = w.vector(p + "post_per_layer_input_norm.weight", H);
    }
    if (g.experts > 0) {
      const int64_t E = g.experts, EI = g.expert_intermediate;
      e.router = w.matrix({p + "router.proj.weight"}, {E}, H);
      // Gemma4TextRouter: norm(x) * scale * hidden^-0.5, the two factors folded into one weight.
      e.router_scale = w.vector(p + "router.scale", H);
      {
        std::vector<float> v(static_cast<size_t>(H));
        be.copy_to_host(v.data(), e.router_scale.view.data, v.size() * sizeof(float));
        const float root = static_cast<float>(1.0 / std::sqrt(static_cast<double>(H)));
        for (float& f : v) f *= root;
        e.router_scale = be.upload_f32(v, "router scale");
      }
      e.per_expert_scale = w.vector(p + "router.per_expert_scale", E);
      e.gate_up = w.experts(p + "experts.gate_up_proj", E, 2 * EI, H);
      e.down = w.experts(p + "experts.down_proj", E, H, EI);
      for (auto& m : e.gate_up) e.gate_up_ptrs.push_back(m.get());
      for (auto& m : e.down) e.down_ptrs.push_back(m.get());
      e.pre_ff_norm_2 = w.vector(p + "pre_feedforward_layernorm_2.weight", H);
      e.post_ff_norm_1 = w.vector(p + "post_feedforward_layernorm_1.weight", H);
      e.post_ff_norm_2 = w.vector(p + "post_feedforward_layernorm_2.weight", H);
    }
    d.layers.push_back(std::move(Lw));
    x.layers.push_back(std::move(e));
  }
  d.norm = w.vector("norm.weight", H);
  if (!tied) {
    d.lm_head = w.matrix({"lm_head.weight"}, {c.vocab}, H);
  } else {
    for (const char* t : {"lm_head.weight", "lm_head.scales", "lm_head.biases"})
      if (dir.has(t)) dir.take(t);
  }
  dir.check_all_used();
  return d;
}

}  // namespace tessera::gemma4
