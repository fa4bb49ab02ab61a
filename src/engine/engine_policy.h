// The policies an Engine is built with, as small functions of plain numbers (tested in
// tests/engine/test_engine_policy.cpp): which ids end a generation (the EOS set), and the sizes
// of the context, the forward step and the paged KV pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace tessera {

// The chat end-of-turn and end-of-text tokens of the families tessera knows (Gemma's
// <end_of_turn>, Llama 3's <|eot_id|> and <|end_of_text|>, Qwen's <|im_end|> and <|endoftext|>),
// by name: those the vocabulary has join the EOS set.
std::span<const char* const> end_of_turn_tokens();

// The EOS set: generation_config.json's ids, the tokenizer's EOS and the end-of-turn ids the
// vocabulary has; sorted, distinct, and only ids in [0, vocab_size).
std::vector<int32_t> eos_set(std::span<const int> config_ids, std::optional<int32_t> tokenizer_eos,
                             std::span<const int32_t> end_of_turn_ids, int vocab_size);

// Positions per sequence: `requested`, or min(max_position_embeddings, 32768 on a GPU, 8192 on
// the CPU) when 0. Throws Error(invalid_argument) when above max_position_embeddings.
int context_length_for(int requested, int max_position_embeddings, bool gpu);
// Tokens per forward step: `requested`, or 8192 on a GPU and 512 on the CPU when not positive,
// and then at least whole_prompt (a bidirectional model's context: its inputs run whole in one
// step, so that by default every input the context takes fits; 0: none).
int max_batch_tokens_for(int requested, bool gpu, int whole_prompt = 0);
// Sequences running at once: `requested`, or 256 on a GPU and 16 on the CPU when not positive.
int max_seqs_for(int requested, bool gpu);

struct KvSizing {
  size_t requested = 0;  // --kv-memory; 0: automatic
  size_t full = 0;       // bytes that hold max_seqs full contexts (KvPool::bytes_for)
  bool gpu = false;
  size_t device_free = 0;   // what the device has free now, after the weights; 0: unknown (CPU)
  size_t in_use = 0;        // bytes tessera holds on the device now (the weights)
  size_t activations = 0;   // the model's scratch for one step (Model::scratch_bytes)
  size_t memory_limit = 0;  // --memory-limit; 0: none
  size_t host_memory = 0;   // the machine's physical memory (the CPU's device); 0: unknown
};

// The KV pool's byte budget: `requested` when given; otherwise what max_seqs full contexts take,
// at most 24 GiB on a GPU and 1 GiB on the CPU, within nine tenths of what the GPU has free less
// the activations, and within nine tenths of what the memory limit leaves after the weights and
// the activations. Throws Error(out_of_memory) when the GPU's free memory or the memory limit
// leaves nothing for a KV pool, or (on the CPU) when `requested` is more than the machine has.
size_t kv_pool_bytes(const KvSizing& s);

// Once the pool is allocated: throws Error(out_of_memory) when the memory limit cannot hold what
// is in use (weights and pool) plus the activations.
void check_memory_limit(size_t memory_limit, size_t in_use, size_t activations, size_t weight_bytes,
                        size_t pool_bytes);

}  // namespace tessera
