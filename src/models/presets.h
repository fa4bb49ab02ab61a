// Random-weight models of real shapes, written as Hugging Face model directories. This is how
// demos, tests and benchmarks get weights on machines that cannot download any.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace tessera {

struct MakeModelOptions {
  std::string preset;  // gemma3-tiny, gemma3-1b, ...
  std::string out_dir;
  DType dtype = DType::bf16;
  uint64_t seed = 0;
  std::string tokenizer_dir;  // optional: copy tokenizer.json / tokenizer_config.json from here
};

std::vector<std::string> preset_names();
// Writes config.json, generation_config.json and model.safetensors. Returns the parameter count.
int64_t make_model(const MakeModelOptions& opts);

}  // namespace tessera
