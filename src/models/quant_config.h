// The quantization a model directory declares, as mlx-lm writes and reads it (ml-explore/mlx-lm
// mlx_lm/utils.py load_model, quantize_model): config.json's "quantization" block (mirrored as
// "quantization_config"; vision-language conversions may carry it under text_config only) with
// the default {"group_size", "bits", "mode"} and per-module overrides keyed by module path
// ("model.layers.3.mlp.down_proj": {"bits": 6, "group_size": 64}, or false for a module left
// dense). A module is quantized when its checkpoint has `<path>.scales` (mlx-lm's predicate);
// the shapes then fix its bits and group size, which must agree with the config.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "io/model_dir.h"

namespace tessera {

struct QuantConfig {
  bool declared = false;  // the directory has a quantization block
  QuantFormat base;
  // Canonical module path (ModelDir's names: "layers.3.mlp.down_proj", "lm_head") -> its
  // format; nullopt where the override is false.
  std::map<std::string, std::optional<QuantFormat>> overrides;
  std::string where;  // "config.json quantization" etc., for messages

  // What the config says module `path` holds: its override, else the base (bits 0 if neither).
  QuantFormat for_module(const std::string& path) const;
};

// Reads the block; throws Error(unsupported) for another mode (mxfp4, nvfp4, mxfp8) or a
// foreign quant_method (gptq, awq, ...), Error(invalid_model) for malformed entries.
QuantConfig read_quant_config(const ModelDir& dir);

// The format module `path` (canonical) has in `dir`: bits 0 when it has no .scales. Checks the
// packed weight, scales and biases against each other, against cols (in_features) and against
// the config, naming the tensor and both sides when they disagree.
QuantFormat module_format(const ModelDir& dir, const QuantConfig& qc, const std::string& path,
                          int64_t rows, int64_t cols);

}  // namespace tessera
