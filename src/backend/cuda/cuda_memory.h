// Device and pinned host memory for the CUDA backend. Every device allocation is counted by
// memory_tracker(Device::cuda) before cudaMalloc, so active/peak are exact and a configured limit
// fails with Error(out_of_memory) instead of a crash. Each free bumps free_epoch(): captured CUDA
// graphs remember the epoch they were captured in and are dropped when memory they might reference
// has gone.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "backend/backend.h"

namespace tessera::cuda {

class CudaBuffer final : public DeviceBuffer {
 public:
  CudaBuffer(size_t bytes, const char* what);
  ~CudaBuffer() override;
  void* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

uint64_t free_epoch();

// Page-locked host memory (for async copies), counted by the CPU tracker.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(size_t bytes, const char* what);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  void* data() const { return data_; }
  size_t size() const { return size_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// A device buffer that grows (never shrinks, at least doubling so that slowly growing requests
// reallocate rarely: each reallocation invalidates captured graphs).
struct GrowBuffer {
  std::unique_ptr<CudaBuffer> buf;
  void* get(size_t bytes, const char* what) {
    if (!buf || buf->size() < bytes) {
      const size_t n = std::max(bytes, buf ? 2 * buf->size() : bytes);
      buf.reset();
      buf = std::make_unique<CudaBuffer>(n, what);
    }
    return buf->data();
  }
};

}  // namespace tessera::cuda
