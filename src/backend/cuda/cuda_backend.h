// The CUDA backend's extras beyond ComputeBackend, for the tests and the GPU benchmark: its tuning
// (cuda_tuning.h: graphs, fusions, the linear path and GEMV kernel) and the device facts a report
// prints.
#pragma once

#include <string>

#include "backend/backend.h"
#include "backend/cuda/cuda_tuning.h"

namespace tessera::cuda {

// The backend's tuning, read at every op (so a test may change it between ops); nullptr when `b`
// is not the CUDA backend.
CudaTuning* tuning(ComputeBackend& b);

// Device name and compute capability, e.g. "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)".
std::string cuda_device_description();

// Ceilings measured on this GPU (for the benchmark's report): a device-to-device copy in GB/s
// counting bytes read plus written, and a square bf16 GEMM through cuBLASLt in TFLOP/s, each the
// median of `reps` timed runs after warm-up, on random data.
double measure_copy_gbps(size_t bytes, int reps);
double measure_gemm_tflops(int n, int reps);
// One linear layer timed on the given path (gemv or cublaslt): microseconds per call, median.
double time_linear_us(int M, int N, int K, LinearPath path, int reps);

// Per-launch times inside CUDA graphs: an empty kernel, the decode step's GEMV shapes on both GEMV
// kernels (rows, stream) at M = 1, 2, 8, and the decode attention at several contexts; one line
// each (gpu_bench --decode-ops).
std::string decode_ops_report(int reps);
// Gemma-3-1B's LM head at M = 1 with the final norm fused, with and without the greedy pick,
// inside CUDA graphs: one line (gpu_bench --lm-ops).
std::string lm_head_report(int reps);
// The packed GEMV (MLX affine, `bits` 4 or 8, `group`) per launch inside CUDA graphs at
// Gemma-3-1B's decode shapes, M = 1, plain and with a decode step's fusions (gpu_bench
// --quant-ops).
std::string quant_ops_report(int reps, int bits, int group);

// cudaProfilerStart / Stop, so that `ncu --profile-from-start off` sees one chosen step.
void profiler_range(bool start);

}  // namespace tessera::cuda
