// tessera's own memory accounting. Every large allocation (weights, KV pool, activations) on a
// device goes through that device's tracker, so that the metrics report exact active and peak
// bytes and a configured limit fails cleanly (tessera::Error out_of_memory) instead of letting
// the process crash.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tessera {

enum class Device : uint8_t { cpu, cuda };
const char* device_name(Device d);

class MemoryTracker {
 public:
  explicit MemoryTracker(std::string name) : name_(std::move(name)) {}

  // Counts `bytes` against the limit; throws Error(out_of_memory) naming `what` if it won't fit.
  void reserve(size_t bytes, const char* what);
  void release(size_t bytes);

  size_t active() const { return active_.load(std::memory_order_relaxed); }
  size_t peak() const { return peak_.load(std::memory_order_relaxed); }
  void reset_peak() { peak_.store(active(), std::memory_order_relaxed); }
  size_t limit() const { return limit_.load(std::memory_order_relaxed); }  // 0: none
  void set_limit(size_t bytes) { limit_.store(bytes, std::memory_order_relaxed); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::atomic<size_t> active_{0};
  std::atomic<size_t> peak_{0};
  std::atomic<size_t> limit_{0};
};

MemoryTracker& memory_tracker(Device d);

// A 64-byte aligned host allocation counted by the CPU tracker.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(size_t bytes, const char* what);
  ~HostBuffer();
  HostBuffer(HostBuffer&& o) noexcept;
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

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

std::string format_bytes(size_t bytes);

}  // namespace tessera
