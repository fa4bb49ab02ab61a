// The batch install kernel (batch.h). Why a kernel and not a host-to-device copy into the live
// buffer: that copy sat on the decode step's critical path (and the ids' copy back with it),
// while the staged copy runs on another stream during the previous forward and this kernel is
// short.
#include "backend/cuda/batch.h"
#include "backend/cuda/cuda_common.h"

namespace tessera::cuda {

namespace {

__global__ void install_batch_kernel(int32_t* __restrict__ live, const int32_t* __restrict__ staged,
                                     size_t words, size_t tok, int n_tok,
                                     const int32_t* __restrict__ ids) {
  pdl_enter();
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    int32_t v = staged[i];
    if (v < 0 && ids && i >= tok && i < tok + n_tok) v = ids[-v - 1];
    live[i] = v;
  }
}

}  // namespace

void install_batch(int32_t* live, const int32_t* staged, size_t words, size_t tok, int n_tok,
                   const int32_t* ids, cudaStream_t st) {
  if (words == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((words + 255) / 256, 264));
  launch(install_batch_kernel, blocks, 256, 0, st, "install batch", live, staged, words, tok, n_tok,
         ids);
  TS_CUDA_LAUNCH("install_batch");
}

}  // namespace tessera::cuda
