// Timing helpers of the GPU benchmark's reports (measure.cu, measure_quant.cu): random fills,
// event-timed medians, per-launch times inside replayed CUDA graphs, and weight copies in
// rotation so that each timed launch reads its weight from HBM rather than the L2.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_memory.h"
#include "core/check.h"

namespace tessera::cuda {

static __global__ void fill_random_bf16(bf16* p, size_t n, uint64_t seed, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f) * 2.f - 1.f;
    p[i] = __float2bfloat16_rn(u * scale);
  }
}

inline void fill(void* p, size_t n, uint64_t seed, float scale) {
  fill_random_bf16<<<1024, 256>>>(static_cast<bf16*>(p), n, seed, scale);
  TS_CUDA_LAUNCH("fill_random_bf16");
}

// Median milliseconds of `reps` runs of f (after 3 warm-ups), timed with events on `st`.
template <class F>
double median_ms(int reps, F&& f, cudaStream_t st = nullptr) {
  cudaEvent_t a, b;
  TS_CUDA(cudaEventCreate(&a));
  TS_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f(i);
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    TS_CUDA(cudaEventRecord(a, st));
    f(i);
    TS_CUDA(cudaEventRecord(b, st));
    TS_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    TS_CUDA(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Copies of a random bf16 weight of `elems` elements, at least `min_copies` and enough to span
// `span_bytes` between them, for timing in rotation: each call then reads its weight from HBM,
// not from the L2. Seeds seed, seed + 1, ...
inline std::vector<std::unique_ptr<CudaBuffer>> rotating_weights(size_t elems, size_t span_bytes,
                                                                 size_t min_copies, uint64_t seed,
                                                                 const char* what) {
  const size_t copies = std::max(min_copies, span_bytes / (elems * 2) + 1);
  std::vector<std::unique_ptr<CudaBuffer>> ws;
  for (size_t i = 0; i < copies; ++i) {
    ws.push_back(std::make_unique<CudaBuffer>(elems * 2, what));
    fill(ws.back()->data(), elems, seed + i, 0.05f);
  }
  return ws;
}

// Microseconds per launch of `n` launches captured in one graph (PDL as in the backend) and
// replayed: what one launch costs inside a decode step's graph. Median of `reps` replays.
template <class F>
double graph_us_per_launch(int n, int reps, F&& f) {
  cudaStream_t st;
  TS_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int i = 0; i < n; ++i) f(i, st);  // eager once: lazy setup outside the capture
  TS_CUDA(cudaStreamSynchronize(st));
  cudaGraph_t g;
  TS_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < n; ++i) f(i, st);
  TS_CUDA(cudaStreamEndCapture(st, &g));
  cudaGraphExec_t ex;
  TS_CUDA(cudaGraphInstantiate(&ex, g, 0));
  const double ms = median_ms(
      reps, [&](int) { TS_CUDA(cudaGraphLaunch(ex, st)); }, st);
  cudaGraphExecDestroy(ex);
  cudaGraphDestroy(g);
  cudaStreamDestroy(st);
  return ms * 1e3 / n;
}

}  // namespace tessera::cuda
