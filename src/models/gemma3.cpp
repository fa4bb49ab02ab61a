// Gemma 3 text models (Gemma3ForCausalLM, the text part of Gemma3ForConditionalGeneration, and
// Gemma3TextModel with use_bidirectional_attention: EmbeddingGemma).
// ref: transformers models/gemma3/modeling_gemma3.py (Gemma3TextModel, Gemma3DecoderLayer).
// What sets Gemma 3 apart from Llama:
// - embeddings scaled by sqrt(hidden) rounded to the weight dtype (Gemma3TextScaledWordEmbedding);
// - RMSNorm computes x * (1 + w): the 1 is folded into the weights at load;
// - four norms per layer ("sandwich": the attention and MLP outputs are normed before they join
//   the residual) and per-head q/k norms;
// - attention scale query_pre_attn_scalar ** -0.5, not head_dim ** -0.5;
// - sliding-window layers (from layer_types, or every layer but each sliding_window_pattern-th)
//   with their own rope base; global layers with rope_theta and optional linear scaling;
// - gelu-tanh gated MLP; optional final logit softcapping (attention softcapping is configured
//   but unused by transformers' Gemma 3, see below); the LM head tied to the embedding.
#include <cmath>

#include "core/check.h"
#include "models/decoder.h"

namespace tessera {
namespace {

class Gemma3Model final : public DecoderModel {
 public:
  Gemma3Model(ModelDir& dir, ComputeBackend& backend, const LoadOptions& opts)
      : DecoderModel(backend) {
    read_config(ConfigReader{dir.config(), dir.config_path()}, dir);
    load(dir, opts);
  }

  // ref: transformers Gemma3TextModel.forward, Gemma3DecoderLayer.forward
  ForwardOutput forward(const HostBatch& hb, std::span<const KvLayerView> kv) override {
    ForwardPass f = begin_forward(hb, kv);
    backend().run_forward(f.b, [&] {
      // x = embed_tokens(ids) * sqrt(hidden), in bf16 as transformers rounds it  [T, hidden]
      embed(f, *w_.embed_tokens, embed_scale_, /*round_to_table_dtype=*/true);
      const Tensor* mlp_out = nullptr;            // the previous layer's, not yet added to x
      const DeviceArray* post_ff_norm = nullptr;  // that layer's post_feedforward_layernorm
      for (size_t l = 0; l < w_.layers.size(); ++l) {
        const LayerWeights& L = w_.layers[l];
        // x += post_feedforward_layernorm(mlp_out); h = input_layernorm(x)
        const ResidualNorm attn_in = add_norm(f, mlp_out, post_ff_norm, L.input_layernorm);
        // q/k RMSNorm, rope at the layer's base, attention (sliding or global)  [T, hidden]
        const Tensor& attn_out = attention_block(f, attn_in, L, kv[l]);
        // x += post_attention_layernorm(attn_out); h = pre_feedforward_layernorm(x)
        const ResidualNorm mlp_in =
            add_norm(f, &attn_out, &L.post_attention_layernorm, L.pre_feedforward_layernorm);
        mlp_out = &gated_mlp(f, mlp_in, L, Activation::gelu_tanh);
        post_ff_norm = &L.post_feedforward_layernorm;
      }
      // x += post_feedforward_layernorm(mlp_out); logits = softcap(lm_head(norm(x))), the head
      // tied to embed_tokens unless the config unties it
      lm_head(f, *mlp_out, post_ff_norm, w_.norm, w_.head(), final_softcap_);
    });
    return f.output();
  }

 private:
  void read_config(const ConfigReader& c, const ModelDir& dir);

  float embed_scale_ = 1.0f;    // sqrt(hidden)
  float final_softcap_ = 0.0f;  // final_logit_softcapping; 0: none
};

void Gemma3Model::read_config(const ConfigReader& c, const ModelDir& dir) {
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
  // EmbeddingGemma: every token sees every other one (ModelInfo::bidirectional).
  in.bidirectional = c.get_bool("use_bidirectional_attention", false);
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
  // A bidirectional model's sliding layers see keys with |q - k| < sliding_window // 2 + 1:
  // transformers' Gemma3TextConfig halves the window when use_bidirectional_attention is set
  // ("due to fa we set exclusive bounds"; it writes the config's value back on save), and
  // Gemma3TextModel's sliding mask is then _bidirectional_window_overlay (modeling_gemma3.py).
  const int window = in.bidirectional ? in.sliding_window / 2 + 1 : in.sliding_window;

  cfg_ = decoder_dims(in);
  DecoderConfig& s = cfg_;
  s.eps = static_cast<float>(c.get_positive("rms_norm_eps", 1e-6));
  s.attn_scale = static_cast<float>(1.0 / std::sqrt(c.get_positive("query_pre_attn_scalar", 256)));
  // transformers' Gemma3Attention reads attn_logit_softcapping but never passes it to the
  // attention function (unlike Gemma 2), so Gemma 3 attention is uncapped whatever the config
  // says; tests/fixtures/models/gemma3_mqa_softcap pins this down.
  s.attn_softcap = 0.0f;
  s.sandwich_norms = true;
  s.qk_norm = true;
  s.norm_add = 1.0f;
  s.bidirectional = in.bidirectional;
  // Sliding layers: the window and rope_local_base_freq; global layers: rope_theta (default 1e6).
  const double local_theta = c.get_positive("rope_local_base_freq", 10000.0);
  for (const std::string& type : in.layer_types) {
    s.window.push_back(type == "sliding_attention" ? window : 0);
    s.rope.push_back(rope_params_for(c, type, 1e6, local_theta));
  }
  embed_scale_ = static_cast<float>(std::sqrt(static_cast<double>(in.hidden_size)));
  final_softcap_ = static_cast<float>(c.get_float("final_logit_softcapping", 0.0));
  if (!(final_softcap_ >= 0) || !std::isfinite(final_softcap_))
    c.bad("final_logit_softcapping", "must be a finite number >= 0 (0 or null: no capping)");
}

}  // namespace

std::unique_ptr<Model> make_gemma3(ModelDir& dir, ComputeBackend& backend,
                                   const LoadOptions& opts) {
  return std::make_unique<Gemma3Model>(dir, backend, opts);
}

}  // namespace tessera
