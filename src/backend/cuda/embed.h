// Embedding gather (+ scale) and row gather (launchers); the contracts of ComputeBackend::embed
// and gather_rows. `ids` and `rows` are device arrays.
#pragma once

#include <cuda_runtime.h>

#include "backend/backend.h"

namespace tessera::cuda {

// table: [V, H] in f32 or bf16 (device).
void embed(const void* table, DType table_dt, int64_t V, int64_t H, const int32_t* ids, int n,
           float scale, bool round_to_table_dtype, Tensor out, cudaStream_t st);
void gather_rows(Tensor x, const int32_t* rows, int n, Tensor out, cudaStream_t st);

}  // namespace tessera::cuda
