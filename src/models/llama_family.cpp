// The Llama family: LlamaForCausalLM (Llama 2 / 3.x, with llama3 rope scaling), MistralForCausalLM
// (sliding window when set), Qwen2ForCausalLM (q/k/v biases) and Qwen3ForCausalLM (per-head q/k
// RMSNorm). ref: transformers models/llama/modeling_llama.py, mistral, qwen2, qwen3.
// Differences from Gemma 3, as DecoderSpec fields: plain RMSNorm (x * w), no embedding scale,
// pre-norm only (post_attention_layernorm is the MLP's input norm), SiLU gate, head_dim ** -0.5.
#include <cmath>

#include "core/check.h"
#include "models/decoder.h"
#include "models/rope.h"

namespace tessera {
namespace {

enum class Family { llama, mistral, qwen2, qwen3 };

class LlamaFamilyModel final : public DecoderModel {
 public:
  LlamaFamilyModel(Family fam, ModelDir& dir, ComputeBackend& backend, const LoadOptions& opts)
      : DecoderModel(backend) {
    ConfigReader c{dir.config(), dir.config_path()};
    ModelInfo& in = info_;
    in.model_type = c.get_string("model_type", "llama");
    ConfigDefaults d;  // transformers' defaults: untied, kv heads = heads, head_dim = H / heads
    read_common_config(c, dir, d, in);
    const std::string act = c.get_string("hidden_act", "silu");
    if (act != "silu" && act != "swish")
      fail(ErrorKind::unsupported, c.file + ": hidden_act '" + act + "' is not supported");
    if (c.get_bool("mlp_bias", false))
      fail(ErrorKind::unsupported, c.file + ": mlp_bias=true is not supported");

    // Attention windows: layer_types when the config lists them (transformers 5 writes them);
    // otherwise Mistral slides every layer when sliding_window is set, and Qwen 2/3 slide layers
    // from max_window_layers on when use_sliding_window is true.
    const bool qwen = fam == Family::qwen2 || fam == Family::qwen3;
    int window = 0;
    if ((fam == Family::mistral || (qwen && c.get_bool("use_sliding_window", false))) &&
        c.has("sliding_window"))
      window = static_cast<int>(c.get_int("sliding_window"));
    in.layer_types = read_layer_types(c, in.num_layers);
    if (!in.layer_types.empty()) {
      if (window == 0 && c.has("sliding_window"))
        window = static_cast<int>(c.get_int("sliding_window"));
    } else {
      const int first_sliding = qwen ? static_cast<int>(c.get_int("max_window_layers", 0)) : 0;
      for (int i = 0; i < in.num_layers; ++i)
        in.layer_types.push_back(window > 0 && i >= first_sliding ? "sliding_attention"
                                                                  : "full_attention");
    }
    for (const auto& t : in.layer_types)
      if (t == "sliding_attention" && window <= 0)
        c.bad("sliding_window", "must be a positive window when layers slide");
    in.sliding_window = window;

    spec_dims_from_info();
    DecoderSpec& s = spec_;
    s.eps = static_cast<float>(c.get_float("rms_norm_eps", 1e-6));
    s.attn_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(in.head_dim)));
    s.act = Activation::silu;
    s.sandwich_norms = false;

    const bool qkv_bias = fam == Family::qwen2 || c.get_bool("attention_bias", false);
    const bool o_bias = fam != Family::qwen2 && c.get_bool("attention_bias", false);
    const bool qk_norm = fam == Family::qwen3;

    in.weight_dtype = choose_weight_dtype(dir, opts, &in.checkpoint_dtype);
    WeightLoader w(dir, backend, in.weight_dtype, opts.progress);
    const int64_t H = s.hidden, hd = s.head_dim, q = int64_t{s.heads} * hd,
                  kv = int64_t{s.kv_heads} * hd;
    embed_ = w.matrix({"embed_tokens.weight"}, {in.vocab_size}, H);
    for (int i = 0; i < in.num_layers; ++i) {
      const std::string p = "layers." + std::to_string(i) + ".";
      DecoderLayer L;
      L.input_norm = w.vector(p + "input_layernorm.weight", H);
      L.pre_ff_norm = w.vector(p + "post_attention_layernorm.weight", H);
      if (qk_norm) {
        L.q_norm = w.vector(p + "self_attn.q_norm.weight", hd);
        L.k_norm = w.vector(p + "self_attn.k_norm.weight", hd);
      }
      L.qkv = w.matrix({p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight",
                        p + "self_attn.v_proj.weight"},
                       {q, kv, kv}, H);
      if (qkv_bias)
        L.qkv_bias = w.vectors(
            {p + "self_attn.q_proj.bias", p + "self_attn.k_proj.bias", p + "self_attn.v_proj.bias"},
            {q, kv, kv});
      L.o = w.matrix({p + "self_attn.o_proj.weight"}, {H}, q);
      if (o_bias) L.o_bias = w.vector(p + "self_attn.o_proj.bias", H);
      L.gate_up = w.matrix({p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"},
                           {s.intermediate, s.intermediate}, H);
      L.down = w.matrix({p + "mlp.down_proj.weight"}, {H}, s.intermediate);
      L.window = in.layer_types[i] == "sliding_attention" ? window : 0;
      RopeParams rp = rope_params_for(c, in.layer_types[i], 10000.0, 0.0);
      L.inv_freq = backend.upload_f32(rope_inv_freq(rp, s.head_dim), "rope inv_freq");
      layers_.push_back(std::move(L));
    }
    finish_load(w, dir, 0.0f);
  }
};

}  // namespace

std::unique_ptr<Model> make_llama(ModelDir& d, ComputeBackend& b, const LoadOptions& o) {
  return std::make_unique<LlamaFamilyModel>(Family::llama, d, b, o);
}
std::unique_ptr<Model> make_mistral(ModelDir& d, ComputeBackend& b, const LoadOptions& o) {
  return std::make_unique<LlamaFamilyModel>(Family::mistral, d, b, o);
}
std::unique_ptr<Model> make_qwen2(ModelDir& d, ComputeBackend& b, const LoadOptions& o) {
  return std::make_unique<LlamaFamilyModel>(Family::qwen2, d, b, o);
}
std::unique_ptr<Model> make_qwen3(ModelDir& d, ComputeBackend& b, const LoadOptions& o) {
  return std::make_unique<LlamaFamilyModel>(Family::qwen3, d, b, o);
}

}  // namespace tessera
