// Per-head q/k RMSNorm + rotary embedding in place on qkv rows (launcher); the contract of
// ComputeBackend::qk_norm_rope. head_dim must be even and at most 512.
#pragma once

#include <cuda_runtime.h>

#include "backend/backend.h"

namespace tessera::cuda {

void qk_norm_rope(Tensor qkv, int nh, int nkv, int hd, const Tensor* q_norm, const Tensor* k_norm,
                  float eps, const int32_t* positions, Tensor inv_freq, cudaStream_t st);

// qk_norm_rope followed by kv_store in one launch: what rope_store_attention (backend.h) runs
// before the attention kernels when the decode attention does not take the rope and the store
// itself (cuda_batch.cpp). Needs the cache dtype equal to qkv's.
bool qk_norm_rope_store_supported(Tensor qkv, const KvLayerView& kv);
void qk_norm_rope_store(Tensor qkv, int nh, int nkv, int hd, const Tensor* q_norm,
                        const Tensor* k_norm, float eps, const int32_t* positions, Tensor inv_freq,
                        const KvLayerView& kv, const int32_t* slot_mapping, cudaStream_t st);

}  // namespace tessera::cuda
