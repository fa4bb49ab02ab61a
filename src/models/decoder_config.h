// What config.json says about a decoder-only transformer, read once at load: its shape, which
// tensors each layer holds, and what varies from layer to layer, as arrays (DESIGN.md, "Models
// are data plus one forward"). Architecture files fill a DecoderConfig from their own keys; the
// layer loader (weight_loader.h) and the blocks (blocks.h) read it.
#pragma once

#include <string>
#include <vector>

#include "models/model.h"
#include "models/rope.h"

namespace tessera {

struct DecoderConfig {
  int hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0, vocab = 0, layers = 0;
  float eps = 1e-6f;          // every RMSNorm's
  float attn_scale = 1.0f;    // scores = q.k * attn_scale (head_dim ** -0.5 unless the model says)
  float attn_softcap = 0.0f;  // 0: none

  // The tensors a layer holds beyond input_layernorm, post_attention_layernorm, q/k/v/o_proj and
  // gate/up/down_proj.
  bool sandwich_norms = false;  // pre_feedforward_layernorm, post_feedforward_layernorm (Gemma 3)
  bool qk_norm = false;         // self_attn.q_norm / k_norm, per-head RMSNorm (Gemma 3, Qwen 3)
  bool qkv_bias = false;        // self_attn.q/k/v_proj.bias (Qwen 2, Llama's attention_bias)
  bool o_bias = false;          // self_attn.o_proj.bias (Llama's attention_bias)
  float norm_add = 0.0f;        // added to every norm weight at load: Gemma's x * (1 + w)
  // Bidirectional attention (ModelInfo::bidirectional): every forward runs non-causal
  // (BatchView::causal false), whatever the batch asked.
  bool bidirectional = false;

  // Per layer, [layers] each.
  std::vector<int> window = {};       // attention window in tokens, 0: full attention
  std::vector<RopeParams> rope = {};  // rotary base and scaling
};

// The dimensions of `in` (filled by read_common_config) as a DecoderConfig; the rest as default.
DecoderConfig decoder_dims(const ModelInfo& in);

// config.json keys every decoder shares, with the architecture's defaults for absent ones.
struct ConfigDefaults {
  int num_kv_heads = 0;  // 0: num_attention_heads
  int head_dim = 0;      // 0: hidden_size / num_attention_heads
  int vocab_size = 0;    // 0: required
  int max_position_embeddings = 4096;
  bool tie_word_embeddings = false;
  int bos_token_id = -1, pad_token_id = -1;
};
// Fills in's dimensions, special ids and EOS list; names the key at fault when a value is
// missing, not positive, or inconsistent (kv heads not dividing heads, odd head_dim).
void read_common_config(const ConfigReader& c, const ModelDir& dir, const ConfigDefaults& d,
                        ModelInfo& in);
// layer_types as listed (validated: one "sliding_attention" / "full_attention" per layer), or
// empty when the config has none.
std::vector<std::string> read_layer_types(const ConfigReader& c, int num_layers);

// The weight dtype for a load: "auto" keeps the checkpoint's (f16 becomes f32), or forces one.
DType choose_weight_dtype(const ModelDir& dir, const LoadOptions& opts, DType* checkpoint_dtype);

// EOS ids from config.json and generation_config.json (an int or a list in either), merged.
std::vector<int> read_eos_ids(const ModelDir& dir);

}  // namespace tessera
