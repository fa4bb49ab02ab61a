// What a loaded model is: architecture, shapes, dtypes, special token ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/dtype.h"

namespace tessera {

// The weight matrices of one class (the module name's last part: "q_proj", "down_proj",
// "embed_tokens", "lm_head") held at one format.
struct WeightFormatInfo {
  std::string tensor;
  int bits = 0, group_size = 0;  // MLX affine quantization; 0: dense (weight_dtype)
  int count = 0;                 // matrices of the class at this format
  size_t file_bytes = 0;         // as stored in the checkpoint (packed words, scales, biases)
  // The file's own type when it is not MLX's: a GGUF block type ("Q4_K", "F16"); "" otherwise.
  std::string stored_as;
};

struct ModelInfo {
  std::string architecture;  // e.g. "Gemma3ForCausalLM"
  std::string model_type;    // e.g. "gemma3_text"
  int vocab_size = 0, hidden_size = 0, intermediate_size = 0;
  int num_layers = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int max_position_embeddings = 0;
  std::vector<std::string> layer_types;  // "full_attention" / "sliding_attention" per layer
  int sliding_window = 0;                // 0 when no layer slides
  // Every token attends to every other one of its sequence (within the sliding window on sliding
  // layers): an embedding model such as EmbeddingGemma (config.json's
  // use_bidirectional_attention). Its prompts run whole, in one forward step, and it only embeds.
  bool bidirectional = false;
  bool tied_embeddings = false;
  DType checkpoint_dtype = DType::f32;  // as stored (the most common dtype among the tensors)
  DType weight_dtype = DType::f32;      // as held in memory
  // What the device computes in (activations, attention, KV cache; products accumulate in f32):
  // f32 on the CPU, bf16 on CUDA.
  DType compute_dtype = DType::f32;
  int64_t parameter_count = 0;
  size_t weight_bytes = 0;                       // as held in memory
  std::vector<WeightFormatInfo> weight_formats;  // every matrix class, in load order
  std::vector<int> eos_token_ids;  // config.json's and generation_config.json's, merged
  int bos_token_id = -1, pad_token_id = -1;
};

}  // namespace tessera
