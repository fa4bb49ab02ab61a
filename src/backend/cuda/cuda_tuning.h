// The CUDA backend's tuning: what a user or a benchmark may vary, parsed once per process from
// TESSERA_CUDA_TUNING (README "Tuning"), e.g. TESSERA_CUDA_TUNING="graphs=off,gemv=stream".
// Everything else the kernels choose is fixed in the code, by shape, where bench/NOTES-cuda.md
// measured it best. Each backend starts with the environment's tuning and reads its copy at every
// op, so a test or the benchmark may change a backend's copy between ops (cuda::tuning()).
#pragma once

#include <string>
#include <string_view>

namespace tessera::cuda {

// Which kernel computes linear() (LinearOps::linear). Forcing one is for diagnosis, the op tests
// and the benchmark's GEMV / cuBLASLt crossover; a forced path whose operands do not suit it
// (dtype, alignment, M > 8 for a GEMV) takes the tiled kernel.
enum class LinearPath {
  automatic,  // by shape: the GEMVs for decode-sized M where they beat cuBLASLt, else cuBLASLt
  gemv,       // a GEMV kernel (GemvKernel picks which)
  cublaslt,   // cuBLASLt on the tensor cores
  tiled,      // the simple tiled kernel (f32 weights; tests)
};

// Which GEMV kernel a decode-sized linear takes (LinearOps; for diagnosis and the op tests).
// rows and stream apply to unfused GEMVs only: the fused ones (norm prologue, gated epilogue,
// the LM head's greedy pick) run on the streaming or the tensor-core kernel.
enum class GemvKernel {
  automatic,  // by M and layer size (linear.cpp)
  rows,       // one output row per warp (gemv_rows.cu)
  cores,      // automatic without the tensor-core kernel
  stream,     // the persistent streaming kernel (gemv_stream.cu)
  mma,        // the tensor-core kernel wherever it fits (gemv_mma.cu)
};

struct CudaTuning {
  // graphs: capture decode steps as CUDA graphs and replay them (off: every step eager).
  bool graphs = true;
  // fusions: the fused ops of backend.h (norm_linear, norm_linear_gated, norm_lm_head with its
  // greedy pick, rope_store_attention, linear_prefetch) and linear_gated run their fused kernels
  // where the shapes allow (off: every one runs its composition of plain ops, for diagnosis and
  // scripts/gpu-check.sh --ab).
  bool fusions = true;
  LinearPath linear = LinearPath::automatic;  // linear=auto|gemv|cublaslt|tiled
  GemvKernel gemv = GemvKernel::automatic;    // gemv=auto|rows|cores|stream|mma
  // pdl: launches carry programmatic dependent launch (off: for profiling, scripts/gpu-check.sh
  // --profile). Process-wide: every kernel launch reads the environment's value (the launch
  // helpers have no backend), so a backend's copy of it changes nothing.
  bool pdl = true;
};

// `spec` as TESSERA_CUDA_TUNING holds it ("key=value,..."; empty: the defaults). Throws
// Error(invalid_argument) naming the variable, the key and its allowed values for an unknown key
// or value.
CudaTuning parse_cuda_tuning(std::string_view spec);
// TESSERA_CUDA_TUNING parsed at the first call (the defaults when unset); throws as
// parse_cuda_tuning, at every call while the variable is malformed.
const CudaTuning& cuda_env_tuning();
// "graphs=on,fusions=on,linear=auto,gemv=auto,pdl=on": every key, as parse_cuda_tuning reads it.
std::string to_string(const CudaTuning& t);

}  // namespace tessera::cuda
