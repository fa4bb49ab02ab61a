// The model-directory targets (config.json, the MLX quantization block, the safetensors index):
// a directory of the scratch area holding fixed weights and the fuzzed JSON file, opened as a
// ModelDir and, for the config targets, loaded onto the CPU backend as `tessera generate` would.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "fuzz_common.h"
#include "io/model_dir.h"
#include "models/model.h"
#include "models/quant_config.h"
#include "tessera/error.h"

namespace tessera::fuzz {

// A model directory `name` whose model.safetensors is a copy of the fixture `weights` (copied
// once: a mutated config.json that keeps the fixture's dimensions reaches the weight checks).
inline std::string model_dir_with_weights(const std::string& name, const std::string& weights) {
  const std::string dir = scratch_subdir(name);
  std::filesystem::copy_file(source_file(weights), dir + "/model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  return dir;
}

inline ComputeBackend& cpu_backend() {
  static std::unique_ptr<ComputeBackend> b = make_cpu_backend();
  return *b;
}

// config.json = data, then the directory read, its quantization block read and the model loaded.
inline void load_with_config(const std::string& dir, const uint8_t* data, size_t size) {
  write_file(dir + "/config.json", data, size);
  try {
    ModelDir d(dir);
    QuantConfig qc = read_quant_config(d);
    for (const auto& [name, t] : d.tensors()) (void)qc.for_module(name);
    auto model = load_model(d, cpu_backend(), LoadOptions{});
    (void)model->info();
  } catch (const Error&) {
  }
}

}  // namespace tessera::fuzz
