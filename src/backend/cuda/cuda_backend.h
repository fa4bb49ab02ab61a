// The CUDA backend's extras beyond ComputeBackend, for the tests and the GPU benchmark: switches
// that pick a path (GEMV vs cuBLASLt, graphs on/off) and the device facts a report prints.
#pragma once

#include <string>

#include "backend/backend.h"

namespace tessera::cuda {

struct CudaBackendControls {
  bool graphs = true;   // capture decode steps as CUDA graphs
  int linear_path = 0;  // 0 auto, 1 GEMV, 2 cuBLASLt, 3 tiled fallback (see LinearOps)
  int gemv_max_m = 8;   // auto: GEMV for M <= this
  int gemv_kind = 1;    // 0 one row per warp, 1 auto, 2 auto on CUDA cores, 3 streaming, 4 mma
  bool fuse = true;     // qk_norm_rope + kv_store in one kernel when issued back to back
  // Decode-sized batches: add_rms_norm computed by the GEMV that consumes its output, and
  // linear_gated as one GEMV with the activation in its epilogue (GemvFusion in linear.h).
  bool fuse_gemv = true;
  // Decode steps: the q/k norm + RoPE and the KV store done by the decode attention kernel
  // (attention.h DecodeRope) instead of a kernel of their own.
  bool fuse_attn_rope = true;
  // An LM head at M = 1 on the streaming GEMV also picks the greedy id (GemvFusion::amax_id), and
  // a plain greedy sample() of those logits takes it instead of launching greedy_rows.
  bool fuse_argmax = true;
  // Decode steps: the o projection's GEMV (M = 1) brings prefetch_percent % of each gate_up
  // block's rows, after its first prefetch_skip_percent %, into the L2 while it waits for the
  // attention (ComputeBackend::prefetch_gated; bench/NOTES-cuda.md run 24). 0: off.
  int prefetch_percent = 30;
  int prefetch_skip_percent = 15;
};

// nullptr when `b` is not the CUDA backend.
CudaBackendControls* cuda_controls(ComputeBackend& b);

// Device name and compute capability, e.g. "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)".
std::string cuda_device_description();

// Ceilings measured on this GPU (for the benchmark's report): a device-to-device copy in GB/s
// counting bytes read plus written, and a square bf16 GEMM through cuBLASLt in TFLOP/s, each the
// median of `reps` timed runs after warm-up, on random data.
double measure_copy_gbps(size_t bytes, int reps);
double measure_gemm_tflops(int n, int reps);
// One linear layer timed on the given path (1 GEMV, 2 cuBLASLt): microseconds per call, median.
double time_linear_us(int M, int N, int K, int path, int reps);

// Per-launch times inside CUDA graphs: an empty kernel, the decode step's GEMV shapes on both GEMV
// kernels (rows, stream) at M = 1, 2, 8, and the decode attention at several contexts; one line
// each (gpu_bench --decode-ops).
std::string decode_ops_report(int reps);
// Gemma-3-1B's LM head at M = 1 with the final norm fused, with and without the greedy pick,
// inside CUDA graphs: one line (gpu_bench --lm-ops).
std::string lm_head_report(int reps);

// cudaProfilerStart / Stop, so that `ncu --profile-from-start off` sees one chosen step.
void profiler_range(bool start);

}  // namespace tessera::cuda
