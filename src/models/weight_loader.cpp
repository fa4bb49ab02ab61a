#include "models/weight_loader.h"

#include "core/check.h"

namespace tessera {

const TensorInfo& WeightLoader::take_checked(const std::string& name,
                                             const std::vector<int64_t>& shape) {
  const TensorInfo& t = dir_.take(name);
  if (t.shape != shape) {
    std::string want = "[";
    for (size_t i = 0; i < shape.size(); ++i) want += (i ? ", " : "") + std::to_string(shape[i]);
    want += "]";
    fail_model(t.file + ": tensor '" + t.name + "' has shape " + t.shape_str() + " but " +
               dir_.config_path() + " implies " + want);
  }
  params_ += t.numel();
  done_ += t.nbytes;
  if (progress_) progress_(done_, total_);
  return t;
}

std::unique_ptr<Weight> WeightLoader::matrix(const std::vector<std::string>& names,
                                             const std::vector<int64_t>& rows, int64_t cols) {
  // The compute interface takes host views, not io's TensorInfo (it knows no file format).
  std::vector<HostTensor> views;
  for (size_t i = 0; i < names.size(); ++i) {
    const TensorInfo& t = take_checked(names[i], {rows[i], cols});
    views.push_back({t.data, t.dtype, t.shape, t.file + ": tensor '" + t.name + "'"});
  }
  std::vector<const HostTensor*> parts;
  for (const HostTensor& v : views) parts.push_back(&v);
  return backend_.upload_weight(parts, dtype_, names[0]);
}

DeviceArray WeightLoader::vector(const std::string& name, int64_t n, float add) {
  const TensorInfo& t = take_checked(name, {n});
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float x = t.dtype == DType::f32    ? static_cast<const float*>(t.data)[i]
              : t.dtype == DType::bf16 ? bf16_to_f32(static_cast<const uint16_t*>(t.data)[i])
                                       : f16_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    v[i] = add + x;
  }
  return backend_.upload_f32(v, "norm/bias vector");
}

DeviceArray WeightLoader::vectors(const std::vector<std::string>& names,
                                  const std::vector<int64_t>& n) {
  std::vector<float> all;
  for (size_t i = 0; i < names.size(); ++i) {
    const TensorInfo& t = take_checked(names[i], {n[i]});
    for (int64_t j = 0; j < n[i]; ++j)
      all.push_back(t.dtype == DType::f32    ? static_cast<const float*>(t.data)[j]
                    : t.dtype == DType::bf16 ? bf16_to_f32(static_cast<const uint16_t*>(t.data)[j])
                                             : f16_to_f32(static_cast<const uint16_t*>(t.data)[j]));
  }
  return backend_.upload_f32(all, "bias vector");
}

LayerWeights load_layer(WeightLoader& w, ComputeBackend& backend, const DecoderConfig& c, int i) {
  const std::string p = "layers." + std::to_string(i) + ".";
  const int64_t H = c.hidden, hd = c.head_dim, I = c.intermediate, q = int64_t{c.heads} * hd,
                kv = int64_t{c.kv_heads} * hd;
  const float add = c.norm_add;
  LayerWeights L;
  L.input_layernorm = w.vector(p + "input_layernorm.weight", H, add);
  L.post_attention_layernorm = w.vector(p + "post_attention_layernorm.weight", H, add);
  if (c.sandwich_norms) {
    L.pre_feedforward_layernorm = w.vector(p + "pre_feedforward_layernorm.weight", H, add);
    L.post_feedforward_layernorm = w.vector(p + "post_feedforward_layernorm.weight", H, add);
  }
  if (c.qk_norm) {
    L.q_norm = w.vector(p + "self_attn.q_norm.weight", hd, add);
    L.k_norm = w.vector(p + "self_attn.k_norm.weight", hd, add);
  }
  L.qkv = w.matrix(
      {p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight"},
      {q, kv, kv}, H);
  if (c.qkv_bias)
    L.qkv_bias = w.vectors(
        {p + "self_attn.q_proj.bias", p + "self_attn.k_proj.bias", p + "self_attn.v_proj.bias"},
        {q, kv, kv});
  L.o = w.matrix({p + "self_attn.o_proj.weight"}, {H}, q);
  if (c.o_bias) L.o_bias = w.vector(p + "self_attn.o_proj.bias", H);
  L.gate_up = w.matrix({p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"}, {I, I}, H);
  L.down = w.matrix({p + "mlp.down_proj.weight"}, {H}, I);
  L.window = c.window[i];
  L.inv_freq = backend.upload_f32(rope_inv_freq(c.rope[i], c.head_dim), "rope inv_freq");
  return L;
}

DecoderWeights load_decoder_weights(WeightLoader& w, ModelDir& dir, ComputeBackend& backend,
                                    const DecoderConfig& c, bool tied) {
  TS_ASSERT(c.window.size() == static_cast<size_t>(c.layers) &&
            c.rope.size() == static_cast<size_t>(c.layers));
  DecoderWeights d;
  d.embed_tokens = w.matrix({"embed_tokens.weight"}, {c.vocab}, c.hidden);
  for (int i = 0; i < c.layers; ++i) d.layers.push_back(load_layer(w, backend, c, i));
  d.norm = w.vector("norm.weight", c.hidden, c.norm_add);
  if (!tied) {
    d.lm_head = w.matrix({"lm_head.weight"}, {c.vocab}, c.hidden);
  } else if (dir.has("lm_head.weight")) {
    // A redundant copy of the tied embedding: transformers ignores it, and so does tessera.
    dir.take("lm_head.weight");
  }
  dir.check_all_used();
  return d;
}

}  // namespace tessera
