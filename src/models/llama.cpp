// The Llama forward and the architectures that run it unchanged: LlamaForCausalLM (Llama 2 /
// 3.x, with llama3 rope scaling), MistralForCausalLM (a sliding window when set),
// Qwen2ForCausalLM (q/k/v biases) and Qwen3ForCausalLM (per-head q/k RMSNorm). Their differences
// are tensors a layer holds and per-layer windows, all in the DecoderConfig read here.
// ref: transformers models/llama/modeling_llama.py, mistral, qwen2, qwen3.
// Against Gemma 3: plain RMSNorm (x * w), no embedding scale, pre-norms only (the
// post_attention_layernorm is the MLP's input norm), SiLU gate, head_dim ** -0.5.
#include <cmath>

#include "core/check.h"
#include "models/decoder.h"

namespace tessera {
namespace {

enum class Family { llama, mistral, qwen2, qwen3 };

class LlamaModel final : public DecoderModel {
 public:
  LlamaModel(Family fam, ModelDir& dir, ComputeBackend& backend, const LoadOptions& opts)
      : DecoderModel(backend) {
    read_config(fam, ConfigReader{dir.config(), dir.config_path()}, dir);
    load(dir, opts);
  }

  // ref: transformers LlamaModel.forward, LlamaDecoderLayer.forward
  ForwardOutput forward(const HostBatch& hb, std::span<const KvLayerView> kv) override {
    ForwardPass f = begin_forward(hb, kv);
    backend().run_forward(f.b, [&] {
      // x = embed_tokens(ids)  [T, hidden]
      embed(f, *w_.embed_tokens, 1.0f, /*round_to_table_dtype=*/false);
      const Tensor* mlp_out = nullptr;  // the previous layer's, not yet added to x
      for (size_t l = 0; l < w_.layers.size(); ++l) {
        const LayerWeights& L = w_.layers[l];
        // x += mlp_out; h = input_layernorm(x)
        const ResidualNorm attn_in = add_norm(f, mlp_out, nullptr, L.input_layernorm);
        // with Qwen 2's q/k/v biases, Qwen 3's q/k norms, Mistral's window  [T, hidden]
        const Tensor& attn_out = attention_block(f, attn_in, L, kv[l]);
        // x += attn_out; h = post_attention_layernorm(x)
        const ResidualNorm mlp_in = add_norm(f, &attn_out, nullptr, L.post_attention_layernorm);
        mlp_out = &gated_mlp(f, mlp_in, L, Activation::silu);
      }
      // x += mlp_out; logits = lm_head(norm(x))
      lm_head(f, *mlp_out, nullptr, w_.norm, w_.head(), /*softcap=*/0.0f);
    });
    return f.output();
  }

 private:
  void read_config(Family fam, const ConfigReader& c, const ModelDir& dir);
};

void LlamaModel::read_config(Family fam, const ConfigReader& c, const ModelDir& dir) {
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

  cfg_ = decoder_dims(in);
  DecoderConfig& s = cfg_;
  s.eps = static_cast<float>(c.get_positive("rms_norm_eps", 1e-6));
  s.attn_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(in.head_dim)));
  s.qkv_bias = fam == Family::qwen2 || c.get_bool("attention_bias", false);
  s.o_bias = fam != Family::qwen2 && c.get_bool("attention_bias", false);
  s.qk_norm = fam == Family::qwen3;
  for (const std::string& type : in.layer_types) {
    s.window.push_back(type == "sliding_attention" ? window : 0);
    s.rope.push_back(rope_params_for(c, type, 10000.0, 0.0));
  }
}

}  // namespace

std::unique_ptr<Model> make_llama(ModelDir& d, ComputeBackend& b, const LoadOptions& o) {
  return std::make_unique<LlamaModel>(Family::llama, d, b, o);
}
std::unique_ptr<Model> make_mistral(ModelDir& d, ComputeBackend& b, const LoadOptions& o) {
  return std::make_unique<LlamaModel>(Family::mistral, d, b, o);
}
std::unique_ptr<Model> make_qwen2(ModelDir& d, ComputeBackend& b, const LoadOptions& o) {
  return std::make_unique<LlamaModel>(Family::qwen2, d, b, o);
}
std::unique_ptr<Model> make_qwen3(ModelDir& d, ComputeBackend& b, const LoadOptions& o) {
  return std::make_unique<LlamaModel>(Family::qwen3, d, b, o);
}

}  // namespace tessera
