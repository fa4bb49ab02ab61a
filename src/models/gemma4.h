// Gemma 4 text models (Gemma4ForCausalLM; the text part of Gemma4ForConditionalGeneration),
// dense and mixture-of-experts. ref: transformers models/gemma4/modeling_gemma4.py
// (Gemma4TextModel, Gemma4TextDecoderLayer, Gemma4TextAttention, Gemma4TextRouter,
// Gemma4TextExperts) and configuration_gemma4.py (Gemma4TextConfig).
// What sets Gemma 4 apart from Gemma 3 (gemma4.cpp's forward reads like the reference):
// - RMSNorm is x * w (no 1 +); v is RMS-normed too (no weight); attention scale 1;
// - global layers rotate at "proportional" rope (a fraction of the angle pairs);
// - per-layer inputs (PLE): a second embedding [vocab, layers * P] plus a projection of the
//   embeddings, normed and mixed, gate each layer's residual through a [P] bottleneck;
// - KV sharing: the last num_kv_shared_layers layers have no k/v projections and attend over
//   the cache of the last earlier layer of their type; their MLP may be twice as wide;
// - every layer ends by scaling the residual by its layer_scalar;
// - MoE layers run a router (softmax, top-k, renormalised, per-expert scale) and experts beside
//   the dense MLP, each branch normed before they are summed.
// Not yet supported (a clear error at load): global layers with another head_dim or kv-head count
// than the sliding ones (global_head_dim, num_global_key_value_heads: the KV pool holds one head
// shape), attention_k_eq_v, use_bidirectional_attention "all".
#pragma once

#include <memory>
#include <vector>

#include "models/decoder.h"

namespace tessera::gemma4 {

// What Gemma4TextConfig says beyond DecoderConfig.
struct Config {
  int ple_dim = 0;        // hidden_size_per_layer_input; 0: no per-layer inputs
  int ple_vocab = 0;      // vocab_size_per_layer_input
  int num_kv_shared = 0;  // num_kv_shared_layers
  bool double_wide_mlp = false;
  int experts = 0, top_k = 0, expert_intermediate = 0;  // enable_moe_block: num_experts > 0
  float final_softcap = 0.0f;                           // 0: none
  float embed_scale = 1.0f;                             // sqrt(hidden)
  std::vector<int>
      kv_source;  // per layer: the layer whose KV cache it reads (itself if not shared)
  std::vector<int> intermediate;  // per layer: its MLP's width
};

// One layer's tensors beyond LayerWeights (whose qkv is q alone in a KV-shared layer).
struct LayerExtras {
  float layer_scalar = 1.0f;
  std::unique_ptr<Weight> ple_gate;  // per_layer_input_gate [P, hidden]
  std::unique_ptr<Weight> ple_proj;  // per_layer_projection [hidden, P]
  DeviceArray ple_norm;              // post_per_layer_input_norm [hidden]
  // MoE
  std::unique_ptr<Weight> router;                      // router.proj [E, hidden]
  DeviceArray router_scale;                            // router.scale * hidden^-0.5 [hidden]
  DeviceArray per_expert_scale;                        // [E]
  std::vector<std::unique_ptr<Weight>> gate_up, down;  // experts: [2 I, hidden], [hidden, I]
  std::vector<const Weight*> gate_up_ptrs, down_ptrs;
  DeviceArray pre_ff_norm_2, post_ff_norm_1, post_ff_norm_2;  // [hidden]
};

// The model-level tensors beyond DecoderWeights.
struct Extras {
  std::unique_ptr<Weight> ple_embed;       // embed_tokens_per_layer [ple_vocab, layers * P]
  std::unique_ptr<Weight> ple_model_proj;  // per_layer_model_projection [layers * P, hidden]
  DeviceArray ple_proj_norm;               // per_layer_projection_norm [P]
  DeviceArray ones;                        // [head_dim] of 1: v_norm, RMSNorm without weight
  std::vector<LayerExtras> layers;
};

// Fills info and cfg (DecoderConfig) and g from config.json (the text_config of a multimodal one).
void read_config(const ConfigReader& c, const ModelDir& dir, ModelInfo& info, DecoderConfig& cfg,
                 Config& g);
// Every tensor: the DecoderWeights part and the extras; then checks nothing is left unused.
DecoderWeights load_weights(WeightLoader& w, ModelDir& dir, ComputeBackend& be,
                            const DecoderConfig& c, const Config& g, bool tied, Extras& x);

}  // namespace tessera::gemma4
