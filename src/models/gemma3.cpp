// Gemma 3 text models (Gemma3ForCausalLM, and the text part of Gemma3ForConditionalGeneration).
// ref: transformers models/gemma3/modeling_gemma3.py (Gemma3TextModel, Gemma3DecoderLayer).
// What sets Gemma 3 apart, all handled as DecoderSpec fields:
// - embeddings scaled by sqrt(hidden) rounded to the weight dtype (Gemma3TextScaledWordEmbedding);
// - RMSNorm computes x * (1 + w): the 1 is folded into the weights at load;
// - four norms per layer (input, post-attention, pre-feedforward, post-feedforward) and per-head
//   q/k norms;
// - attention scale query_pre_attn_scalar ** -0.5, not head_dim ** -0.5;
// - sliding-window layers (from layer_types, or every layer but each sliding_window_pattern-th)
//   with their own rope base; global layers with rope_theta and optional linear scaling;
// - gelu-tanh gated MLP; optional final logit softcapping (attention softcapping is configured
//   but unused by transformers' Gemma 3, see below).
#include <cmath>

#include "core/check.h"
#include "models/decoder.h"
#include "models/rope.h"

namespace tessera {
namespace {

class Gemma3Model final : public DecoderModel {
 public:
  Gemma3Model(ModelDir& dir, ComputeBackend& backend, const LoadOptions& opts)
      : DecoderModel(backend) {
    ConfigReader c{dir.config(), dir.config_path()};
    ModelInfo& in = info_;
    in.model_type = c.get_string("model_type", "gemma3_text");
    ConfigDefaults d;  // transformers' Gemma3TextConfig defaults
    d.num_kv_heads = 4;
    d.head_dim = 256;
    d.vocab_size = 262208;
    d.max_position_embeddings = 131072;
    d.tie_word_embeddings = true;
    d.bos_token_id = 2;
    d.pad_token_id = 0;
    read_common_config(c, dir, d, in);
    if (c.get_bool("use_bidirectional_attention", false))
      fail(ErrorKind::unsupported,
           c.file + ": use_bidirectional_attention=true (embedding models) is not supported");
    if (c.get_bool("attention_bias", false))
      fail(ErrorKind::unsupported, c.file + ": attention_bias=true is not supported for Gemma 3");
    std::string act =
        c.get_string("hidden_activation", c.get_string("hidden_act", "gelu_pytorch_tanh"));
    if (act != "gelu_pytorch_tanh" && act != "gelu_tanh")
      fail(ErrorKind::unsupported, c.file + ": hidden_activation '" + act + "' is not supported");

    // Which layers slide: layer_types (transformers >= 4.53) or the legacy pattern.
    in.sliding_window = static_cast<int>(c.get_int("sliding_window", 4096));
    in.layer_types = read_layer_types(c, in.num_layers);
    if (in.layer_types.empty()) {
      int pattern = static_cast<int>(c.get_int("sliding_window_pattern", 6));
      if (pattern <= 0) c.bad("sliding_window_pattern", "must be positive");
      for (int i = 0; i < in.num_layers; ++i)
        in.layer_types.push_back((i + 1) % pattern ? "sliding_attention" : "full_attention");
    }
    if (in.sliding_window <= 0) c.bad("sliding_window", "must be positive");

    spec_dims_from_info();
    DecoderSpec& s = spec_;
    s.eps = static_cast<float>(c.get_float("rms_norm_eps", 1e-6));
    s.attn_scale = static_cast<float>(1.0 / std::sqrt(c.get_float("query_pre_attn_scalar", 256)));
    // transformers' Gemma3Attention reads attn_logit_softcapping but never passes it to the
    // attention function (unlike Gemma 2), so Gemma 3 attention is uncapped whatever the config
    // says; tests/fixtures/models/gemma3_mqa_softcap pins this down.
    s.attn_softcap = 0.0f;
    s.final_softcap = static_cast<float>(c.get_float("final_logit_softcapping", 0.0));
    s.act = Activation::gelu_tanh;
    s.sandwich_norms = true;
    s.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(in.hidden_size)));
    s.embed_scale_in_weight_dtype = true;

    in.weight_dtype = choose_weight_dtype(dir, opts, &in.checkpoint_dtype);
    WeightLoader w(dir, backend, in.weight_dtype, opts.progress);
    const int64_t H = s.hidden, hd = s.head_dim, q = int64_t{s.heads} * hd,
                  kv = int64_t{s.kv_heads} * hd;
    embed_ = w.matrix({"embed_tokens.weight"}, {in.vocab_size}, H);
    const double global_theta = 1e6, local_theta = c.get_float("rope_local_base_freq", 10000.0);
    for (int i = 0; i < in.num_layers; ++i) {
      const std::string p = "layers." + std::to_string(i) + ".";
      DecoderLayer L;
      L.input_norm = w.vector(p + "input_layernorm.weight", H, 1.0f);
      L.post_attn_norm = w.vector(p + "post_attention_layernorm.weight", H, 1.0f);
      L.pre_ff_norm = w.vector(p + "pre_feedforward_layernorm.weight", H, 1.0f);
      L.post_ff_norm = w.vector(p + "post_feedforward_layernorm.weight", H, 1.0f);
      L.q_norm = w.vector(p + "self_attn.q_norm.weight", hd, 1.0f);
      L.k_norm = w.vector(p + "self_attn.k_norm.weight", hd, 1.0f);
      L.qkv = w.matrix({p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight",
                        p + "self_attn.v_proj.weight"},
                       {q, kv, kv}, H);
      L.o = w.matrix({p + "self_attn.o_proj.weight"}, {H}, q);
      L.gate_up = w.matrix({p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"},
                           {s.intermediate, s.intermediate}, H);
      L.down = w.matrix({p + "mlp.down_proj.weight"}, {H}, s.intermediate);
      const bool sliding = in.layer_types[i] == "sliding_attention";
      L.window = sliding ? in.sliding_window : 0;
      RopeParams rp = rope_params_for(c, in.layer_types[i], global_theta, local_theta);
      L.inv_freq = backend.upload_f32(rope_inv_freq(rp, s.head_dim), "rope inv_freq");
      layers_.push_back(std::move(L));
    }
    finish_load(w, dir, 1.0f);
  }
};

}  // namespace

std::unique_ptr<Model> make_gemma3(ModelDir& dir, ComputeBackend& backend,
                                   const LoadOptions& opts) {
  return std::make_unique<Gemma3Model>(dir, backend, opts);
}

}  // namespace tessera
