// The CUDA backend's quantized weights (ComputeBackend::upload_quantized).
#include "backend/cuda/cuda_backend_impl.h"
#include "core/check.h"

namespace tessera::cuda {

std::unique_ptr<Weight> CudaBackend::upload_quantized(std::span<const HostQuantTensor* const> parts,
                                                      DType, const std::string&) {
  fail(ErrorKind::unsupported, (parts.empty() ? std::string("a weight") : parts[0]->name) +
                                   " is quantized, which the CUDA backend does not run yet");
}

}  // namespace tessera::cuda
