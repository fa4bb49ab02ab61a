#include "core/memory.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/check.h"

namespace tessera {

const char* device_name(Device d) {
  return d == Device::cpu ? "cpu" : "cuda";
}

void MemoryTracker::reserve(size_t bytes, const char* what) {
  size_t lim = limit();
  size_t cur = active_.load(std::memory_order_relaxed);
  for (;;) {
    size_t next = cur + bytes;
    if (lim != 0 && next > lim) {
      fail(ErrorKind::out_of_memory, std::string("memory limit exceeded on ") + name_ + ": " +
                                         what + " needs " + format_bytes(bytes) + " with " +
                                         format_bytes(cur) + " in use and a limit of " +
                                         format_bytes(lim));
    }
    if (active_.compare_exchange_weak(cur, next, std::memory_order_relaxed)) {
      size_t p = peak_.load(std::memory_order_relaxed);
      while (next > p && !peak_.compare_exchange_weak(p, next, std::memory_order_relaxed)) {
      }
      return;
    }
  }
}

void MemoryTracker::release(size_t bytes) {
  active_.fetch_sub(bytes, std::memory_order_relaxed);
}

MemoryTracker& memory_tracker(Device d) {
  static MemoryTracker cpu("cpu");
  static MemoryTracker cuda("cuda");
  return d == Device::cpu ? cpu : cuda;
}

HostBuffer::HostBuffer(size_t bytes, const char* what) : size_(bytes) {
  if (bytes == 0) return;
  memory_tracker(Device::cpu).reserve(bytes, what);
  size_t rounded = (bytes + 63) / 64 * 64;
  data_ = std::aligned_alloc(64, rounded);
  if (!data_) {
    memory_tracker(Device::cpu).release(bytes);
    fail(ErrorKind::out_of_memory,
         std::string("out of host memory allocating ") + format_bytes(bytes) + " for " + what);
  }
}

HostBuffer::~HostBuffer() {
  if (data_) {
    std::free(data_);
    memory_tracker(Device::cpu).release(size_);
  }
}

HostBuffer::HostBuffer(HostBuffer&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    this->~HostBuffer();
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

std::string format_bytes(size_t bytes) {
  char buf[64];
  double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  } else if (b >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
  } else if (b >= 1024.0) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  }
  return buf;
}

}  // namespace tessera
