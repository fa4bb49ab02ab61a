// The packed decode GEMV's 8-bit kernels (gemv_quant.cuh), in a file of their own so that the two
// widths build in parallel.
#include "backend/cuda/gemv_quant.cuh"

namespace tessera::cuda {

template void launch_quant_sb<8>(const QuantGemvArgs&, const QuantLaunch&, cudaStream_t);

}  // namespace tessera::cuda
