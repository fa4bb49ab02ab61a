// The decoder-only transformer that Gemma 3 and the Llama family share: weights in one struct
// per layer and a single forward over a ragged batch, built from backend ops. Architecture files
// (gemma3.cpp, llama_family.cpp) read their config, fill a DecoderSpec and load the weights with
// WeightLoader; the differences between families are fields here, not branches in those files.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/decoder_config.h"
#include "models/model.h"
#include "models/weight_loader.h"

namespace tessera {

struct DecoderSpec {
  int hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0, vocab = 0;
  float eps = 1e-6f;
  float attn_scale = 1.0f;     // Gemma 3: query_pre_attn_scalar ** -0.5
  float attn_softcap = 0.0f;   // 0: none
  float final_softcap = 0.0f;  // 0: none
  Activation act = Activation::silu;
  // Gemma: post-attention and post-feedforward norms on the sublayer outputs ("sandwich"),
  // pre-feedforward norm before the MLP. Llama: the post_attention_layernorm is the pre-MLP norm.
  bool sandwich_norms = false;
  float embed_scale = 1.0f;
  bool embed_scale_in_weight_dtype = false;  // Gemma rounds the scale and product to bf16
};

struct DecoderLayer {
  DeviceArray input_norm, pre_ff_norm;       // always present
  DeviceArray post_attn_norm, post_ff_norm;  // sandwich_norms only
  DeviceArray q_norm, k_norm;                // per-head q/k RMSNorm (Gemma 3, Qwen 3), optional
  DeviceArray qkv_bias;                      // Qwen 2 (and Llama attention_bias), optional
  DeviceArray o_bias;                        // Llama attention_bias, optional
  std::unique_ptr<Weight> qkv, o, gate_up, down;
  DeviceArray inv_freq;  // [head_dim / 2]
  int window = 0;        // 0: full attention
  int kv_group = 0;
};

class DecoderModel : public Model {
 public:
  ForwardOutput forward(const HostBatch& b, std::span<const KvLayerView> kv) override;
  size_t scratch_bytes(int tokens, int logit_rows) const override;

 protected:
  explicit DecoderModel(ComputeBackend& backend) : Model(backend) {}
  // Copies info_'s dimensions into spec_.
  void spec_dims_from_info();
  // The common tail of every load: the final norm (+ norm_add), the LM head or the tied
  // embedding, the unexpected-tensor check, the parameter count and the KV layout.
  void finish_load(WeightLoader& w, ModelDir& dir, float norm_add);

 private:
  void finish_setup(DType kv_dtype);                        // kv_spec_ from the layers' windows
  const Tensor* post_ff_norm(const DecoderLayer* l) const;  // null: none (or no layer)
  AttentionLayer attention_layer(const DecoderLayer& L) const;
  static const Tensor* optional(const DeviceArray& a) { return a.buffer ? &a.view : nullptr; }

 protected:
  DecoderSpec spec_;
  std::unique_ptr<Weight> embed_;    // [vocab, hidden]
  std::unique_ptr<Weight> lm_head_;  // null when tied to embed_
  DeviceArray final_norm_;
  std::vector<DecoderLayer> layers_;
};

}  // namespace tessera
