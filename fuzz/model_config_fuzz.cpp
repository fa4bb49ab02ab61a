// config.json -> the model's configuration (models/decoder_config.cpp, each architecture's
// read_config) and a load of the dense Llama 3 fixture's weights under it.
#include "model_dir_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = tessera::fuzz::model_dir_with_weights(
      "config", "tests/fixtures/models/llama3/model.safetensors");
  tessera::fuzz::load_with_config(dir, data, size);
  return 0;
}
