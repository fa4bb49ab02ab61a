#include "models/decoder.h"

#include <map>

#include "core/check.h"
#include "io/gguf.h"

namespace tessera {

void DecoderModel::load(ModelDir& dir, const LoadOptions& opts) {
  ModelInfo& in = info_;
  in.weight_dtype = choose_weight_dtype(dir, opts, &in.checkpoint_dtype);
  // CUDA computes in bf16 (activations, attention and KV cache; f32 accumulation), so f32
  // weights there would cost twice the memory and bandwidth for no precision: "auto" holds an f32
  // checkpoint in bf16 (and a GGUF file's blocks dequantize to bf16 tiles for the batched
  // products, as an MLX directory's bf16 scales do), and f32 is refused by name rather than
  // accepted and computed in bf16 (issue 33, item 4). The CPU computes in f32.
  in.compute_dtype = backend().act_dtype();
  if (backend().device() == Device::cuda) {
    if (opts.dtype == "f32" || opts.dtype == "float32")
      fail_arg(
          "--dtype f32: the CUDA backend computes in bf16 (activations, attention and KV cache, "
          "with f32 accumulation); for f32 computation run on the CPU (--device cpu)");
    in.weight_dtype = DType::bf16;
  }
  QuantFormat quantize_to;
  if (opts.quantize_bits != 0) {
    if (opts.quantize_bits != 4 && opts.quantize_bits != 8)
      fail_arg("--quantize takes 4 or 8 (bits), not " + std::to_string(opts.quantize_bits));
    if (opts.quantize_group_size != 32 && opts.quantize_group_size != 64 &&
        opts.quantize_group_size != 128)
      fail_arg("the quantization group size must be 32, 64 or 128, not " +
               std::to_string(opts.quantize_group_size));
    quantize_to = {opts.quantize_bits, opts.quantize_group_size};
  }
  WeightLoader w(dir, *backend_, in.weight_dtype, opts.progress, quantize_to);
  w_ = load_weights(w, dir);
  in.parameter_count = w.parameters();
  in.weight_bytes = w.bytes_held();
  in.weight_formats = w.formats();
  set_kv_spec(in.weight_dtype == DType::f32 ? DType::f32 : DType::bf16);
}

void DecoderModel::set_kv_spec(DType kv_dtype) {
  std::map<int, int> group_of_window;
  kv_spec_ = KvSpec{};
  kv_spec_.num_kv_heads = cfg_.kv_heads;
  kv_spec_.head_dim = cfg_.head_dim;
  kv_spec_.dtype = kv_dtype;
  for (auto& layer : w_.layers) {
    auto it = group_of_window.find(layer.window);
    if (it == group_of_window.end()) {
      it = group_of_window.emplace(layer.window, static_cast<int>(kv_spec_.group_window.size()))
               .first;
      kv_spec_.group_window.push_back(layer.window);
    }
    layer.kv_group = it->second;
    kv_spec_.layer_group.push_back(it->second);
  }
  if (kv_spec_.group_window.size() > static_cast<size_t>(kMaxKvGroups))
    fail(ErrorKind::unsupported, "more than " + std::to_string(kMaxKvGroups) +
                                     " distinct attention windows are not supported");
}

size_t DecoderModel::scratch_bytes(int tokens, int logit_rows) const {
  return activation_bytes(cfg_, backend_->act_dtype(), tokens, logit_rows);
}

}  // namespace tessera
