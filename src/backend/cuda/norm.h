// RMSNorm and the fused residual add + RMSNorm (launchers). Same contracts as
// ComputeBackend::rms_norm / add_rms_norm; weights are f32, x/y/out f32 or bf16, residual f32.
#pragma once

#include <cuda_runtime.h>

#include "backend/backend.h"

namespace tessera::cuda {

void rms_norm(Tensor x, Tensor w, float eps, Tensor out, cudaStream_t st);
void add_rms_norm(Tensor residual, Tensor y, const Tensor* w_y, const Tensor* w_out, float eps,
                  Tensor out, cudaStream_t st);

}  // namespace tessera::cuda
