// Shared by every CUDA file: error checks that throw tessera::Error (never abort), element
// load/store helpers for f32/bf16 tensors, and warp/block reductions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "backend/backend.h"
#include "tessera/error.h"

namespace tessera::cuda {

// Throws Error(internal) naming the call and the CUDA error; out-of-memory becomes out_of_memory.
void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line);

#define TS_CUDA(call)                                                        \
  do {                                                                       \
    cudaError_t ts_err_ = (call);                                            \
    if (ts_err_ != cudaSuccess)                                              \
      ::tessera::cuda::throw_cuda_error(ts_err_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: a bad configuration shows up here, an asynchronous fault at the next
// synchronising call.
#define TS_CUDA_LAUNCH(what) TS_CUDA(cudaPeekAtLastError())

using bf16 = __nv_bfloat16;

#if defined(__CUDACC__)
template <class T>
__device__ __forceinline__ float to_f32(T v);
template <>
__device__ __forceinline__ float to_f32<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float to_f32<bf16>(bf16 v) {
  return __bfloat162float(v);
}

template <class T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) {
  return v;
}
// Round to nearest even, as torch and the CPU backend's f32_to_bf16 do.
template <>
__device__ __forceinline__ bf16 from_f32<bf16>(float v) {
  return __float2bfloat16_rn(v);
}

// Programmatic dependent launch: every kernel of this backend calls pdl_wait() before it touches
// memory that an earlier kernel writes or reads (activations, the KV cache, batch arrays written
// by the upload all count), then pdl_trigger() so that the next kernel can start launching. Loads
// of weights -- which nothing writes -- may come before the wait, so that they overlap the
// previous kernel's tail. Both are no-ops in a launch without the attribute.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_enter() {
  pdl_wait();
  pdl_trigger();
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block; every thread gets the result. `red` holds >= 32 floats of shared memory.
__device__ __forceinline__ float block_sum(float v, float* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();  // red may still be read by a previous call
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = lane < nw ? red[lane] : 0.f;
  return warp_sum(t);
}
#endif

// Whether launches carry the programmatic-stream-serialisation attribute (CudaTuning::pdl: the
// environment's, process-wide).
bool pdl_enabled();

// Gives `kernel` the backend's one shared-memory carveout (the first time it sees it), or with
// `driver_default` leaves the driver's choice (call it so before the kernel's first launch(),
// which asks for the carveout otherwise). An SM changes its L1 / shared-memory split only
// while no block is resident, so kernels whose automatic carveouts differ (the decode attention
// wants ~84 KB, the GEMVs ~13-26 KB) drain the SM between them and lose PDL's overlap. One split
// for the decode step's kernels: 58% of the shared-memory maximum (132 of the H200's 228 KB),
// which leaves the L1 enough (100% measured slower). The attention kernels of big grids keep the
// driver's choice, which fits two of their blocks per SM (58% measured slower there).
void set_carveout(const void* kernel, bool driver_default = false);

// Whether a cluster of `n` blocks of `kernel` (`threads` each, `smem` bytes of dynamic shared
// memory, which this raises the kernel's limit to) can be resident on this GPU: compute
// capability 9 or later, cudaOccupancyMaxActiveClusters > 0, sizes over 8 allowed as
// non-portable ones. Asked once per (kernel, n, threads, smem).
bool cluster_fits(const void* kernel, int n, int threads, size_t smem);

// Launches `kernel` on `st` with programmatic dependent launch when enabled, the grid's blocks in
// thread-block clusters of `cluster_x` along x (1: no clusters), and the backend's carveout
// (set_carveout) or, with `driver_carveout`, the driver's; checks the launch.
template <class... KArgs, class... Args>
void launch_clusters(unsigned cluster_x, bool driver_carveout, void (*kernel)(KArgs...), dim3 grid,
                     dim3 block, size_t smem, cudaStream_t st, const char* what, Args&&... args) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;
  if (!driver_carveout) set_carveout(reinterpret_cast<const void*>(kernel));
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = st;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (pdl_enabled()) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster_x > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster_x;
    attr[n].val.clusterDim.y = 1;
    attr[n++].val.clusterDim.z = 1;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  if (e != cudaSuccess) throw_cuda_error(e, what, __FILE__, __LINE__);
}

// The same without clusters, with the backend's carveout.
template <class... KArgs, class... Args>
void launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t st,
            const char* what, Args&&... args) {
  launch_clusters(1, false, kernel, grid, block, smem, st, what, std::forward<Args>(args)...);
}

// Dispatches a lambda on the element type of `dt` (f32 or bf16).
template <class F>
void dispatch_float(DType dt, F&& f) {
  if (dt == DType::f32) {
    f(float{});
  } else if (dt == DType::bf16) {
    f(bf16{});
  } else {
    throw Error(ErrorKind::unsupported,
                std::string("CUDA op: unsupported dtype ") + dtype_name(dt));
  }
}

inline unsigned ceil_div(long long a, long long b) {
  return static_cast<unsigned>((a + b - 1) / b);
}

}  // namespace tessera::cuda
