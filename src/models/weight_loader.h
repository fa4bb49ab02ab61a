// Weights by their checkpoint names: WeightLoader takes one tensor (or a stack of them) with the
// shape the config implies; load_decoder_weights takes a whole decoder the way a DecoderConfig
// describes it, every layer through the one per-layer loader.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/decoder_config.h"
#include "models/quant_config.h"

namespace tessera {

// Loads weights by canonical name with the shape the config implies, and names the tensor and
// the config key when they disagree. A matrix whose module is MLX-quantized in the checkpoint
// (quant_config.h) is uploaded packed; with `quantize_to`, dense matrices are quantized at load
// by MLX's algorithm (quant/affine.h) first.
class WeightLoader {
 public:
  WeightLoader(ModelDir& dir, ComputeBackend& backend, DType weight_dtype,
               std::function<void(size_t, size_t)> progress = {}, QuantFormat quantize_to = {});

  // Stacks the named [rows_i, cols] matrices (e.g. q, k, v) into one weight.
  std::unique_ptr<Weight> matrix(const std::vector<std::string>& names,
                                 const std::vector<int64_t>& rows, int64_t cols);
  // A [n] vector as f32, plus `add` (Gemma folds its (1 + w) here).
  DeviceArray vector(const std::string& name, int64_t n, float add = 0.0f);
  // Several [n_i] vectors concatenated (q, k, v biases).
  DeviceArray vectors(const std::vector<std::string>& names, const std::vector<int64_t>& n);
  // A stack of E [rows, cols] matrices stored as one [E, rows, cols] tensor (transformers'
  // fused experts, e.g. Gemma4TextExperts.gate_up_proj): one weight per expert, dense.
  std::vector<std::unique_ptr<Weight>> experts(const std::string& name, int64_t E, int64_t rows,
                                               int64_t cols);
  // A [1] tensor's value on the host (Gemma 4's layer_scalar).
  float scalar(const std::string& name);
  bool has(const std::string& name) const { return dir_.has(name); }

  int64_t parameters() const { return params_; }
  // Bytes the uploaded weights hold on the device (packing and padding included).
  size_t bytes_held() const { return held_; }
  // Every matrix loaded, by class and format (ModelInfo::weight_formats).
  const std::vector<WeightFormatInfo>& formats() const { return formats_; }

 private:
  const TensorInfo& take_checked(const std::string& name, const std::vector<int64_t>& shape);
  void record(const std::string& module, QuantFormat f, size_t file_bytes,
              const std::string& stored_as = "");
  ModelDir& dir_;
  ComputeBackend& backend_;
  DType dtype_;
  std::function<void(size_t, size_t)> progress_;
  QuantConfig qc_;
  QuantFormat quantize_to_;
  size_t total_ = 0, done_ = 0, held_ = 0;
  int64_t params_ = 0;
  std::vector<WeightFormatInfo> formats_;
};

// One decoder layer's weights under transformers' names (ref: LlamaDecoderLayer,
// Gemma3DecoderLayer): each architecture's forward gives the norms their roles (Llama's
// post_attention_layernorm is its MLP's input norm, Gemma 3's normalizes the attention output).
// Norms are f32 with DecoderConfig::norm_add folded in; absent optional tensors are empty.
struct LayerWeights {
  DeviceArray input_layernorm, post_attention_layernorm;              // [hidden]
  DeviceArray pre_feedforward_layernorm, post_feedforward_layernorm;  // sandwich_norms: [hidden]
  DeviceArray q_norm, k_norm;                                         // qk_norm: [head_dim]
  std::unique_ptr<Weight> qkv;      // q_proj; k_proj; v_proj stacked: [(nh + 2 nkv) hd, hidden]
  DeviceArray qkv_bias;             // qkv_bias: [(nh + 2 nkv) hd]
  std::unique_ptr<Weight> o;        // o_proj: [hidden, nh hd]
  DeviceArray o_bias;               // o_bias: [hidden]
  std::unique_ptr<Weight> gate_up;  // gate_proj; up_proj stacked: [2 intermediate, hidden]
  std::unique_ptr<Weight> down;     // down_proj: [hidden, intermediate]
  DeviceArray inv_freq;             // [head_dim / 2] from DecoderConfig::rope
  int window = 0;                   // DecoderConfig::window: 0, full attention
  int kv_group = 0;                 // the KvSpec group of its window (DecoderModel sets it)
};

struct DecoderWeights {
  std::unique_ptr<Weight> embed_tokens;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  DeviceArray norm;                 // the final norm [hidden]
  std::unique_ptr<Weight> lm_head;  // [vocab, hidden]; null when tied to embed_tokens
  const Weight& head() const { return lm_head ? *lm_head : *embed_tokens; }
};

// Layer i's tensors (layers.<i>.*), those `c` says it holds, and its rope frequencies.
LayerWeights load_layer(WeightLoader& w, ComputeBackend& backend, const DecoderConfig& c, int i);

// The embedding, every layer, the final norm and the LM head (unless `tied`); then checks that
// the checkpoint holds nothing else.
DecoderWeights load_decoder_weights(WeightLoader& w, ModelDir& dir, ComputeBackend& backend,
                                    const DecoderConfig& c, bool tied);

}  // namespace tessera
