#include "backend/cuda/cuda_memory.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <tuple>
#include <unordered_set>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_tuning.h"
#include "core/check.h"

namespace tessera::cuda {

namespace {
std::atomic<uint64_t> g_free_epoch{0};
}

bool pdl_enabled() {
  static const bool on = cuda_env_tuning().pdl;
  return on;
}

void set_carveout(const void* kernel, bool driver_default) {
  constexpr int kCarveoutPercent = 58;
  // Per thread, so that a launch costs a lookup and no lock; setting it twice is harmless.
  thread_local std::unordered_set<const void*> done;
  if (!done.insert(kernel).second || driver_default) return;
  TS_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                               kCarveoutPercent));
}

bool cluster_fits(const void* kernel, int n, int threads, size_t smem) {
  // Per thread, like set_carveout: a launch decision costs a lookup and no lock.
  thread_local std::map<std::tuple<const void*, int, int, size_t>, bool> known;
  const auto key = std::make_tuple(kernel, n, threads, smem);
  if (auto it = known.find(key); it != known.end()) return it->second;
  int dev = 0, major = 0;
  bool ok = cudaGetDevice(&dev) == cudaSuccess &&
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
            major >= 9;
  if (!ok) return known[key] = false;
  if (smem > 0)
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         static_cast<int>(smem));
  if (n > 8) cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(n, 1, 1);
  cfg.blockDim = threads;
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = n;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int clusters = 0;
  ok = cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) == cudaSuccess && clusters > 0;
  cudaGetLastError();  // a refusal is an answer, not an error
  return known[key] = ok;
}

uint64_t free_epoch() {
  return g_free_epoch.load(std::memory_order_relaxed);
}

void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line) {
  std::string msg = std::string("CUDA error ") + cudaGetErrorName(e) + " (" +
                    cudaGetErrorString(e) + ") in " + what + " at " + file + ":" +
                    std::to_string(line);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the sticky-free error state
    throw Error(ErrorKind::out_of_memory, msg);
  }
  throw Error(ErrorKind::internal, msg);
}

CudaBuffer::CudaBuffer(size_t bytes, const char* what) : size_(bytes) {
  if (bytes == 0) return;
  MemoryTracker& t = memory_tracker(Device::cuda);
  t.reserve(bytes, what);
  cudaError_t e = cudaMalloc(&data_, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    t.release(bytes);
    data_ = nullptr;
    fail(ErrorKind::out_of_memory, std::string("out of GPU memory allocating ") +
                                       format_bytes(bytes) + " for " + what + " (" +
                                       cudaGetErrorString(e) + ")");
  }
}

CudaBuffer::~CudaBuffer() {
  if (!data_) return;
  g_free_epoch.fetch_add(1, std::memory_order_relaxed);
  cudaFree(data_);  // synchronises the device: no kernel still reads it
  memory_tracker(Device::cuda).release(size_);
}

PinnedBuffer::PinnedBuffer(size_t bytes, const char* what) : size_(bytes) {
  if (bytes == 0) return;
  memory_tracker(Device::cpu).reserve(bytes, what);
  cudaError_t e = cudaMallocHost(&data_, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    memory_tracker(Device::cpu).release(bytes);
    data_ = nullptr;
    fail(ErrorKind::out_of_memory, std::string("cannot allocate ") + format_bytes(bytes) +
                                       " of pinned host memory for " + what);
  }
}

PinnedBuffer::~PinnedBuffer() {
  if (!data_) return;
  cudaFreeHost(data_);
  memory_tracker(Device::cpu).release(size_);
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    this->~PinnedBuffer();
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

}  // namespace tessera::cuda
