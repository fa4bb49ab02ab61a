// Gemma 2 (Gemma2ForCausalLM). ref: transformers models/gemma2/modeling_gemma2.py
// (Gemma2Model, Gemma2DecoderLayer, Gemma2Attention) and configuration_gemma2.py.
// What sets Gemma 2 apart from Gemma 3, whose layer layout it shares (four "sandwich" norms per
// layer, RMSNorm as x * (1 + w), embeddings scaled by sqrt(hidden) in the weight dtype,
// gelu-tanh gated MLP, tied head):
// - attention logits tanh-softcapped (attn_logit_softcapping, default 50) before the mask;
// - final logits softcapped (final_logit_softcapping, default 30);
// - no q/k norms;
// - sliding and global layers alternate: layer_types, or (legacy configs and transformers'
//   default) every even layer slides (sliding_window, default 4096);
// - one rotary base for every layer (rope_theta, or rope_parameters in transformers 5).
// A key present as null ("attn_logit_softcapping": null) turns the capping off, as in
// transformers; an absent key takes the default.
#include <cmath>

#include "core/check.h"
#include "models/decoder.h"

namespace tessera {
namespace {

class Gemma2Model final : public DecoderModel {
 public:
  Gemma2Model(ModelDir& dir, ComputeBackend& backend, const LoadOptions& opts)
      : DecoderModel(backend) {
    read_config(ConfigReader{dir.config(), dir.config_path()}, dir);
    load(dir, opts);
  }

  // ref: transformers Gemma2Model.forward, Gemma2DecoderLayer.forward, Gemma2ForCausalLM.forward
  ForwardOutput forward(const HostBatch& hb, std::span<const KvLayerView> kv) override {
    ForwardPass f = begin_forward(hb, kv);
    backend().run_forward(f.b, [&] {
      // x = embed_tokens(ids) * sqrt(hidden), the normalizer in the weight dtype  [T, hidden]
      embed(f, *w_.embed_tokens, embed_scale_, /*round_to_table_dtype=*/true);
      const Tensor* mlp_out = nullptr;            // the previous layer's, not yet added to x
      const DeviceArray* post_ff_norm = nullptr;  // that layer's post_feedforward_layernorm
      for (size_t l = 0; l < w_.layers.size(); ++l) {
        const LayerWeights& L = w_.layers[l];
        // x += post_feedforward_layernorm(mlp_out); h = input_layernorm(x)
        const ResidualNorm attn_in = add_norm(f, mlp_out, post_ff_norm, L.input_layernorm);
        // rope, softcapped attention (sliding or global), o_proj  [T, hidden]
        const Tensor& attn_out = attention_block(f, attn_in, L, kv[l]);
        // x += post_attention_layernorm(attn_out); h = pre_feedforward_layernorm(x)
        const ResidualNorm mlp_in =
            add_norm(f, &attn_out, &L.post_attention_layernorm, L.pre_feedforward_layernorm);
        mlp_out = &gated_mlp(f, mlp_in, L, Activation::gelu_tanh);
        post_ff_norm = &L.post_feedforward_layernorm;
      }
      // x += post_feedforward_layernorm(mlp_out); logits = softcap(lm_head(norm(x)))
      lm_head(f, *mlp_out, post_ff_norm, w_.norm, w_.head(), final_softcap_);
    });
    return f.output();
  }

 private:
  void read_config(const ConfigReader& c, const ModelDir& dir);

  float embed_scale_ = 1.0f;     // sqrt(hidden)
  float final_softcap_ = 30.0f;  // final_logit_softcapping; 0: none
};

// A softcap key: absent, the default; null, none (0); else a finite number >= 0.
float softcap_key(const ConfigReader& c, const char* key, double dflt) {
  if (c.j.contains(key) && c.j[key].is_null()) return 0.0f;
  const double v = c.get_float(key, dflt);
  if (!(v >= 0) || !std::isfinite(v))
    c.bad(key, "must be a finite number >= 0 (0 or null: no capping)");
  return static_cast<float>(v);
}

void Gemma2Model::read_config(const ConfigReader& c, const ModelDir& dir) {
  ModelInfo& in = info_;
  in.model_type = c.get_string("model_type", "gemma2");
  ConfigDefaults d;  // transformers' Gemma2Config defaults
  d.num_kv_heads = 4;
  d.head_dim = 256;
  d.vocab_size = 256000;
  d.max_position_embeddings = 8192;
  d.tie_word_embeddings = true;
  d.bos_token_id = 2;
  d.pad_token_id = 0;
  read_common_config(c, dir, d, in);
  if (c.get_bool("attention_bias", false))
    fail(ErrorKind::unsupported, c.file + ": attention_bias=true is not supported for Gemma 2");
  if (c.get_bool("use_bidirectional_attention", false))
    fail(ErrorKind::unsupported,
         c.file + ": use_bidirectional_attention=true is not supported for Gemma 2");
  const std::string act =
      c.get_string("hidden_activation", c.get_string("hidden_act", "gelu_pytorch_tanh"));
  if (act != "gelu_pytorch_tanh" && act != "gelu_tanh")
    fail(ErrorKind::unsupported, c.file + ": hidden_activation '" + act + "' is not supported");

  // Which layers slide: layer_types (transformers >= 4.53), else every even layer
  // (Gemma2Config's default; older transformers' `not bool(layer_idx % 2)`).
  in.sliding_window = c.get_int("sliding_window", 4096);
  if (in.sliding_window <= 0) c.bad("sliding_window", "must be positive");
  in.layer_types = read_layer_types(c, in.num_layers);
  if (in.layer_types.empty())
    for (int i = 0; i < in.num_layers; ++i)
      in.layer_types.push_back((i + 1) % 2 ? "sliding_attention" : "full_attention");

  cfg_ = decoder_dims(in);
  DecoderConfig& s = cfg_;
  s.eps = static_cast<float>(c.get_positive("rms_norm_eps", 1e-6));
  s.attn_scale = static_cast<float>(1.0 / std::sqrt(c.get_positive("query_pre_attn_scalar", 256)));
  s.attn_softcap = softcap_key(c, "attn_logit_softcapping", 50.0);
  s.sandwich_norms = true;
  s.norm_add = 1.0f;
  for (const std::string& type : in.layer_types) {
    s.window.push_back(type == "sliding_attention" ? in.sliding_window : 0);
    s.rope.push_back(rope_params_for(c, type, 10000.0, 0.0));
  }
  embed_scale_ = static_cast<float>(std::sqrt(static_cast<double>(in.hidden_size)));
  final_softcap_ = softcap_key(c, "final_logit_softcapping", 30.0);
}

}  // namespace

std::unique_ptr<Model> make_gemma2(ModelDir& dir, ComputeBackend& backend,
                                   const LoadOptions& opts) {
  return std::make_unique<Gemma2Model>(dir, backend, opts);
}

}  // namespace tessera
