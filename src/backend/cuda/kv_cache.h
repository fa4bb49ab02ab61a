// Writes each token's k and v (from qkv rows) into the paged cache at slot_mapping[t] (launcher);
// the contract of ComputeBackend::kv_store. Slots < 0 (padding rows) are skipped.
#pragma once

#include <cuda_runtime.h>

#include "backend/backend.h"

namespace tessera::cuda {

void kv_store(Tensor qkv, int nh, int nkv, int hd, const KvLayerView& kv,
              const int32_t* slot_mapping, cudaStream_t st);

}  // namespace tessera::cuda
