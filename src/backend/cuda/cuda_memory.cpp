#include "backend/cuda/cuda_memory.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <unordered_set>

#include "backend/cuda/cuda_common.h"
#include "core/check.h"

namespace tessera::cuda {

namespace {
std::atomic<uint64_t> g_free_epoch{0};
}

bool pdl_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("TESSERA_PDL");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

void set_carveout(const void* kernel, bool driver_default) {
  static const int pct = [] {
    const char* e = std::getenv("TESSERA_CARVEOUT");
    return e ? std::atoi(e) : 58;
  }();
  if (pct < 0) return;
  // Per thread, so that a launch costs a lookup and no lock; setting it twice is harmless.
  thread_local std::unordered_set<const void*> done;
  if (!done.insert(kernel).second || driver_default) return;
  TS_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                               std::min(pct, 100)));
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
