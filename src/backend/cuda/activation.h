// Gated MLP activation and logit softcapping (launchers); the contracts of
// ComputeBackend::gated_act and softcap.
#pragma once

#include <cuda_runtime.h>

#include "backend/backend.h"

namespace tessera::cuda {

void gated_act(Tensor gate_up, Activation act, Tensor out, cudaStream_t st);
void softcap(Tensor x, float cap, cudaStream_t st);

}  // namespace tessera::cuda
