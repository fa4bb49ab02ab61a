// Ceilings and per-layer timings for the GPU benchmark (declared in cuda_backend.h): a
// device-to-device copy, a large bf16 GEMM through cuBLASLt, and one linear layer on a chosen
// path. Inputs are random (never zeros), timed with events, median of the timed runs; layer
// timings rotate through enough weight copies to defeat the L2 cache.
#include <cuda_profiler_api.h>

#include <algorithm>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/linear.h"

namespace tessera::cuda {

namespace {

__global__ void fill_random_bf16(bf16* p, size_t n, uint64_t seed, float scale) {
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

void fill(void* p, size_t n, uint64_t seed, float scale) {
  fill_random_bf16<<<1024, 256>>>(static_cast<bf16*>(p), n, seed, scale);
  TS_CUDA_LAUNCH("fill_random_bf16");
}

// Median milliseconds of `reps` runs of f (after 3 warm-ups), timed with events.
template <class F>
double median_ms(int reps, F&& f) {
  cudaEvent_t a, b;
  TS_CUDA(cudaEventCreate(&a));
  TS_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f(i);
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    TS_CUDA(cudaEventRecord(a));
    f(i);
    TS_CUDA(cudaEventRecord(b));
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

}  // namespace

double measure_copy_gbps(size_t bytes, int reps) {
  CudaBuffer a(bytes, "copy ceiling"), b(bytes, "copy ceiling");
  fill(a.data(), bytes / 2, 1, 1.f);
  const double ms = median_ms(reps, [&](int) {
    TS_CUDA(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice));
  });
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

double measure_gemm_tflops(int n, int reps) {
  const size_t e = static_cast<size_t>(n) * n;
  CudaBuffer x(e * 2, "gemm ceiling"), w(e * 2, "gemm ceiling"), o(e * 2, "gemm ceiling");
  fill(x.data(), e, 2, 1.f);
  fill(w.data(), e, 3, 1.f);
  LinearOps lin;
  lin.set_force_path(2);
  Tensor xt{x.data(), DType::bf16, n, n, n}, ot{o.data(), DType::bf16, n, n, n};
  const double ms = median_ms(
      reps, [&](int) { lin.linear(xt, w.data(), DType::bf16, n, n, nullptr, ot, nullptr); });
  return 2.0 * n * static_cast<double>(n) * n / (ms * 1e-3) / 1e12;
}

double time_linear_us(int M, int N, int K, int path, int reps) {
  const size_t we = static_cast<size_t>(N) * K;
  const int copies = static_cast<int>(std::max<size_t>(1, (512u << 20) / (we * 2) + 1));
  std::vector<std::unique_ptr<CudaBuffer>> ws;
  for (int i = 0; i < copies; ++i) {
    ws.push_back(std::make_unique<CudaBuffer>(we * 2, "linear timing"));
    fill(ws.back()->data(), we, 10 + i, 0.05f);
  }
  CudaBuffer x(static_cast<size_t>(M) * K * 2, "linear timing"),
      o(static_cast<size_t>(M) * N * 4, "linear timing");
  fill(x.data(), static_cast<size_t>(M) * K, 4, 1.f);
  LinearOps lin;
  lin.set_force_path(path);
  Tensor xt{x.data(), DType::bf16, M, K, K}, ot{o.data(), DType::bf16, M, N, N};
  const double ms = median_ms(reps, [&](int i) {
    lin.linear(xt, ws[i % copies]->data(), DType::bf16, N, K, nullptr, ot, nullptr);
  });
  return ms * 1e3;
}

void profiler_range(bool start) {
  TS_CUDA(cudaDeviceSynchronize());
  TS_CUDA(start ? cudaProfilerStart() : cudaProfilerStop());
}

}  // namespace tessera::cuda
