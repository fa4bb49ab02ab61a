// config.json's MLX quantization block (models/quant_config.cpp: the default {group_size, bits,
// mode} and per-module overrides), read and then checked against the mixed 4/8-bit Llama 3
// fixture's packed weights, scales and biases by a load (models/mlx_quantize.cpp).
#include "model_dir_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = tessera::fuzz::model_dir_with_weights(
      "quant", "tests/fixtures/quant/llama3_mixed/model.safetensors");
  tessera::fuzz::load_with_config(dir, data, size);
  return 0;
}
