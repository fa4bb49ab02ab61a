// tessera quantize: a dense (bf16 / f16 / f32) Hugging Face directory written as an MLX affine-
// quantized one, as mlx-lm's convert (mlx_lm/convert.py, utils.py quantize_model) writes it:
// every Linear and Embedding weight whose input width is a multiple of its group size becomes
// `<module>.weight` (U32 packed), `.scales` and `.biases` (the source dtype) by MLX's quantizer
// (quant/affine.h); everything else is copied; config.json gains the "quantization" block and its
// "quantization_config" mirror; the tokenizer, chat template and generation files are copied.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <vector>

#include "backend/backend.h"
#include "io/safetensors.h"

namespace tessera {

struct QuantizeOptions {
  std::string model_dir, out_dir;
  int bits = 4, group_size = 64;
  // mlx-lm's mixed recipes (convert.py mixed_quant_predicate_builder): "2_6", "3_4", "3_6",
  // "4_6". v_proj and down_proj of the first and last eighth of the layers and of every third
  // layer between, and lm_head, take the high width; every other module the low one (bits is
  // then ignored). Each quantized module gets its own config entry, as mlx-lm writes them.
  std::string mixed;
  // Per-module formats by the checkpoint's module path ("model.layers.0.mlp.down_proj"), or
  // nullopt to keep a module dense; they win over bits and mixed.
  std::map<std::string, std::optional<QuantFormat>> overrides;
};

struct QuantizeReport {
  int quantized = 0, copied = 0;  // tensors
  size_t bytes_in = 0, bytes_out = 0;
};

// A dense matrix t [rows, cols] (cols a multiple of f.group_size; bf16, f16 or f32) quantized by
// MLX's algorithm (quant::quantize_row on every row): the packed words [rows, cols * bits / 32]
// and the scales and biases [rows, cols / group_size] in t's dtype, as mlx-lm writes them (the
// loader's --quantize and `tessera quantize` both use it, so both give the same bits).
struct QuantizedMatrix {
  std::vector<uint32_t> packed;
  std::vector<uint16_t> s16, b16;  // bf16 / f16 sources
  std::vector<float> s32, b32;     // f32 sources
  DType dtype = DType::bf16;       // of the scales and biases: t's
  const void* scales() const;
  const void* biases() const;
};
QuantizedMatrix quantize_matrix(const TensorInfo& t, QuantFormat f);

// Throws Error(invalid_argument) for bad options or an output directory that is the input,
// Error(invalid_model) for a source that is already quantized or unreadable.
QuantizeReport quantize_model_dir(const QuantizeOptions& o);

}  // namespace tessera
