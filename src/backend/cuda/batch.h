// Installs an uploaded batch (launcher): the staged arrays, copied to the device on the upload
// stream while the previous forward ran, into the live batch buffer the forward's kernels (and
// captured graphs) read, with sampled tokens taken from the last sample's ids on the device.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tessera::cuda {

// live[i] = staged[i] for i < words, except the tokens live[tok, tok + n_tok): a staged value
// v < 0 there is the id of row -v - 1 of the last sample, ids[-v - 1] (HostBatch::sampled).
void install_batch(int32_t* live, const int32_t* staged, size_t words, size_t tok, int n_tok,
                   const int32_t* ids, cudaStream_t st);

}  // namespace tessera::cuda
