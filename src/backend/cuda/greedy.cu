// Greedy sampling on the GPU (sampling.h greedy_rows): each logits row's first maximum (lowest id
// on ties, NaN as -inf), scanned by several blocks whose (max, id) pairs the last one to finish
// merges, in the order the sampler and the LM head's fused pick use (device_math.cuh before()).
#include <algorithm>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/device_math.cuh"
#include "backend/cuda/sampling.h"

namespace tessera::cuda {

namespace {

// MANY: few blocks per row, each thread with many rounds of loads (greedy_rows).
template <bool MANY>
__global__ void __launch_bounds__(256)
    greedy_kernel(const float* __restrict__ logits, int64_t stride, int V, float* __restrict__ part,
                  int* __restrict__ counters, int32_t* __restrict__ ids) {
  pdl_enter();
  __shared__ float wv[8];
  __shared__ int wi[8];
  __shared__ int is_last;
  const int r = blockIdx.y, b = blockIdx.x, nb = gridDim.x, tid = threadIdx.x;
  const int chunk = ((V + nb - 1) / nb + 3) / 4 * 4;
  const int i0 = min(V, b * chunk), i1 = min(V, i0 + chunk);
  const float* row = logits + static_cast<int64_t>(r) * stride;
  float bv = -INFINITY;
  int bi = -1;
  auto take = [&](float v, int i) { argmax_take(v, i, bv, bi); };
  int i = i0;
  if (reinterpret_cast<uintptr_t>(row + i0) % 16 == 0) {
    constexpr int kStep = 4 * 256;  // floats per block per round of 16-byte loads
    constexpr int kLoads = 4;       // 8 measured the same
    int k = i0 + 4 * tid;
    // Few blocks per row (many rows): four loads issued before any is used, so that a thread
    // keeps 64 bytes in flight (the compiler left the unrolled loop's loads in series).
    if constexpr (MANY) {
      for (; k + (kLoads - 1) * kStep + 3 < i1; k += kLoads * kStep) {
        float4 v[kLoads];
#pragma unroll
        for (int u = 0; u < kLoads; ++u)
          v[u] = __ldcs(reinterpret_cast<const float4*>(row + k + u * kStep));
#pragma unroll
        for (int u = 0; u < kLoads; ++u) {
          take(v[u].x, k + u * kStep);
          take(v[u].y, k + u * kStep + 1);
          take(v[u].z, k + u * kStep + 2);
          take(v[u].w, k + u * kStep + 3);
        }
      }
    }
#pragma unroll 4
    for (; k + 3 < i1; k += kStep) {
      const float4 v = __ldcs(reinterpret_cast<const float4*>(row + k));
      take(v.x, k);
      take(v.y, k + 1);
      take(v.z, k + 2);
      take(v.w, k + 3);
    }
    i = i0 + (i1 - i0) / 4 * 4;
  }
  for (int k = i + tid; k < i1; k += 256) take(row[k], k);
  block256_argmax(bv, bi, wv, wi);
  if (tid == 0) {
    part[(static_cast<int64_t>(r) * nb + b) * 2] = bv;
    part[(static_cast<int64_t>(r) * nb + b) * 2 + 1] = __int_as_float(bi);
    __threadfence();
    is_last = atomicAdd(&counters[r], 1) == nb - 1;
  }
  __syncthreads();
  if (!is_last || tid >= 32) return;
  __threadfence();
  bv = -INFINITY;
  bi = -1;
  for (int k = tid; k < nb; k += 32) {
    const float v = __ldcg(part + (static_cast<int64_t>(r) * nb + k) * 2);
    const int id = __float_as_int(__ldcg(part + (static_cast<int64_t>(r) * nb + k) * 2 + 1));
    if (id >= 0 && before(v, id, bv, bi)) bv = v, bi = id;
  }
  warp_argmax(bv, bi);
  if (tid == 0) {
    ids[r] = bi < 0 ? 0 : bi;
    counters[r] = 0;
  }
}

}  // namespace

int sampler_sms() {
  int dev = 0, n = 0;
  TS_CUDA(cudaGetDevice(&dev));
  TS_CUDA(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  return n;
}

void greedy_rows(const float* logits, int64_t stride, int R, int V, float* part, int* counters,
                 int32_t* ids, cudaStream_t st) {
  if (R == 0) return;
  // kGreedyBlocks per row for a few rows (latency: one round of loads per thread); with many rows
  // about four blocks per SM in all, each with many rounds of loads in flight, instead of
  // kGreedyBlocks x R short blocks.
  static const int sms = sampler_sms();
  const int nb = std::clamp((4 * sms + R - 1) / R, 1, kGreedyBlocks);  // 8 per SM: the same
  launch(nb < kGreedyBlocks ? greedy_kernel<true> : greedy_kernel<false>, dim3(nb, R), 256, 0, st,
         "greedy sample", logits, stride, V, part, counters, ids);
}

}  // namespace tessera::cuda
