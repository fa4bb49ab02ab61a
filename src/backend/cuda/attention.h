// Attention over the paged KV cache (launchers); the contract of ComputeBackend::attention.
// Three kernels: a flash-attention prefill kernel on the tensor cores (bf16 q/K/V, head_dim 64,
// 128 or 256), a split-KV decode kernel for sequences with one new token (bf16, same head dims,
// up to 8 q heads per kv head), and a generic warp-per-(token, head) kernel for everything else
// (f32 caches, other head dims). Keys run over [max(0, p - window + 1), min(p, kv_len - 1)] for
// the token at position p when causal; bidirectional (AttnParams::causal false) up to
// kv_len - 1, within p + window - 1 when window > 0 (key_hi). A token with no keys (padding)
// gets zeros. The decode kernel needs no bidirectional mode: a sequence's one new token is at
// kv_len - 1, where both modes see the same keys.
#pragma once

#include <cuda_runtime.h>

#include "backend/backend.h"

namespace tessera::cuda {

struct AttnParams {
  const void* qkv = nullptr;
  int64_t qkv_stride = 0;
  DType qkv_dt = DType::bf16;
  int nh = 0, nkv = 0, hd = 0;
  const void* k = nullptr;
  const void* v = nullptr;
  DType kv_dt = DType::bf16;
  int block_size = 0;
  const int32_t* positions = nullptr;
  const int32_t* token_seq = nullptr;
  const int32_t* seq_q_start = nullptr;
  const int32_t* seq_q_len = nullptr;
  const int32_t* seq_kv_len = nullptr;
  const int32_t* block_table = nullptr;  // [S, max_blocks]
  int max_blocks = 0;
  int num_tokens = 0, num_seqs = 0;
  float scale = 1.f;
  int window = 0;
  bool causal = true;  // BatchView::causal
  float softcap = 0.f;
  void* out = nullptr;
  int64_t out_stride = 0;
  DType out_dt = DType::bf16;
};

// The last key (inclusive) the token at position `pos` of a sequence of kv_len keys sees.
__host__ __device__ inline int key_hi(const AttnParams& p, int pos, int kv_len) {
  if (p.causal) return pos < kv_len - 1 ? pos : kv_len - 1;
  const int end = p.window > 0 && pos + p.window - 1 < kv_len - 1 ? pos + p.window - 1 : kv_len - 1;
  return end;
}

constexpr int kDecodeMaxRep = 8;
constexpr int kDecodeKeysPerSplit = 64;

void attention_generic(const AttnParams& p, cudaStream_t st);

bool attention_fast_supported(const AttnParams& p);

// Splits (blocks along the key axis) the decode kernel uses for contexts up to kv_cap keys.
int attention_decode_splits(const AttnParams& p, int kv_cap);
// Workspace floats for the partial results and ints for the per-(seq, kv head) counters.
size_t attention_decode_partial_floats(const AttnParams& p, int nsplit);
// Whether the merge of `nsplit` splits fits the kernel's shared memory (else: attention_generic).
bool attention_decode_fits(const AttnParams& p, int nsplit);
// The q/k norm + RoPE of the step's tokens and the store of their k and v into the cache
// (qk_norm_rope_store in rope.h), taken over by the decode kernel when `on`: the same results in
// the cache and in the attention output, but qkv keeps its unrotated q and k.
struct DecodeRope {
  bool on = false;
  const float* q_norm = nullptr;  // [hd] or null
  const float* k_norm = nullptr;  // [hd] or null
  float eps = 0.f;
  const float* inv_freq = nullptr;     // [hd / 2]
  const int32_t* positions = nullptr;  // [num_tokens] the rotation's positions
  const int32_t* slots = nullptr;      // [num_tokens] cache slot of each token, -1 for none
};

// Sequences with seq_q_len != 1 are skipped. `counters` must be zero (the kernel leaves them so).
// With `rope`, every sequence must have seq_q_len == 1 (the others' rope would be skipped).
void attention_decode(const AttnParams& p, int nsplit, float* partials, int* counters,
                      cudaStream_t st, const DecodeRope* rope = nullptr);

// Prefill work: row tiles of 64 (token, head) rows per sequence and kv head, each split over
// `nsplit` ranges of `tiles_per_split` key tiles when there are too few row tiles to fill the GPU
// (short prompts); a merge kernel then combines the splits.
struct PrefillPlan {
  int row_tiles = 0, nsplit = 1, tiles_per_split = 1;
  size_t partial_floats = 0;  // workspace, zero when nsplit == 1
};
PrefillPlan attention_prefill_plan(const AttnParams& p, int max_q_len, int max_kv_len);
// skip_single: leave sequences with one new token to attention_decode.
void attention_prefill(const AttnParams& p, const PrefillPlan& plan, bool skip_single,
                       float* partials, cudaStream_t st);

}  // namespace tessera::cuda
