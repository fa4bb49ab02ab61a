#include "engine/engine_policy.h"

#include <algorithm>
#include <string>

#include "core/check.h"
#include "core/memory.h"

namespace tessera {

std::span<const char* const> end_of_turn_tokens() {
  static const char* const kTokens[] = {"<end_of_turn>", "<|eot_id|>", "<|im_end|>",
                                        "<|end_of_text|>", "<|endoftext|>"};
  return kTokens;
}

std::vector<int32_t> eos_set(std::span<const int> config_ids, std::optional<int32_t> tokenizer_eos,
                             std::span<const int32_t> end_of_turn_ids, int vocab_size) {
  std::vector<int32_t> eos(config_ids.begin(), config_ids.end());
  if (tokenizer_eos) eos.push_back(*tokenizer_eos);
  eos.insert(eos.end(), end_of_turn_ids.begin(), end_of_turn_ids.end());
  std::sort(eos.begin(), eos.end());
  eos.erase(std::unique(eos.begin(), eos.end()), eos.end());
  std::erase_if(eos, [&](int32_t id) { return id < 0 || id >= vocab_size; });
  return eos;
}

int context_length_for(int requested, int max_position_embeddings, bool gpu) {
  const int ctx = requested > 0 ? requested : std::min(max_position_embeddings, gpu ? 32768 : 8192);
  if (ctx > max_position_embeddings)
    fail_arg("context length " + std::to_string(ctx) +
             " exceeds the model's max_position_embeddings (" +
             std::to_string(max_position_embeddings) + ")");
  return ctx;
}

int max_batch_tokens_for(int requested, bool gpu, int whole_prompt) {
  return requested > 0 ? requested : std::max(gpu ? 8192 : 512, whole_prompt);
}

int max_seqs_for(int requested, bool gpu) {
  return requested > 0 ? requested : (gpu ? 256 : 16);
}

size_t kv_pool_bytes(const KvSizing& s) {
  if (s.requested) {
    // On a GPU the pool's allocation reports it; on the CPU the pool's bookkeeping, sized from
    // it, came first (--kv-memory 1000G took 13 GB and 48 s to fail).
    if (!s.gpu && s.host_memory && s.requested > s.host_memory)
      fail(ErrorKind::out_of_memory, "the requested KV memory (" + format_bytes(s.requested) +
                                         ") is more than the machine has (" +
                                         format_bytes(s.host_memory) + ")");
    return s.requested;
  }
  const size_t cap = s.gpu ? (size_t{24} << 30) : (size_t{1} << 30);
  size_t kv = std::min(s.full, cap);
  // On a GPU also what it still has after the weights: nine tenths of it (the rest for the
  // workspaces, graphs and sampler buffers that come later) less the activations, so that the
  // defaults start on a 16 GB card or a MIG slice instead of failing to allocate 24 GiB.
  if (s.device_free) {
    const size_t usable = s.device_free / 10 * 9;
    if (usable <= s.activations)
      fail(ErrorKind::out_of_memory,
           "the GPU has " + format_bytes(s.device_free) + " free after loading the weights (" +
               format_bytes(s.in_use) + "), not enough for the activations (" +
               format_bytes(s.activations) +
               ") and a KV cache; lower --batch-tokens / --max-seqs or free GPU memory");
    kv = std::min(kv, usable - s.activations);
  }
  if (s.memory_limit) {
    const size_t used = s.in_use + s.activations;
    if (used >= s.memory_limit)
      fail(ErrorKind::out_of_memory, "memory limit " + format_bytes(s.memory_limit) +
                                         " is too small: weights take " + format_bytes(s.in_use) +
                                         " and activations need " + format_bytes(s.activations));
    kv = std::min(kv, (s.memory_limit - used) * 9 / 10);
  }
  return kv;
}

void check_memory_limit(size_t memory_limit, size_t in_use, size_t activations, size_t weight_bytes,
                        size_t pool_bytes) {
  if (memory_limit && in_use + activations > memory_limit)
    fail(ErrorKind::out_of_memory, "memory limit " + format_bytes(memory_limit) +
                                       " cannot hold the weights (" + format_bytes(weight_bytes) +
                                       "), the KV pool (" + format_bytes(pool_bytes) +
                                       ") and activations (" + format_bytes(activations) + ")");
}

}  // namespace tessera
