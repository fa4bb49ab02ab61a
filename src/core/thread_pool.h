// A fixed pool of worker threads for data-parallel loops (the CPU kernels' only threading).
// parallel_for splits [0, n) into one contiguous range per thread; the caller's thread takes
// part, so a pool of size 1 runs everything inline. Workers spin briefly before sleeping because
// decode issues thousands of short parallel regions per second.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera {

class ThreadPool {
 public:
  // fn(begin, end, thread_index)
  using RangeFn = std::function<void(int64_t, int64_t, int)>;

  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn over [0, n) split into size() ranges whose bounds are multiples of `grain`
  // (the last may be short). Nested calls from inside fn run inline.
  void parallel_for(int64_t n, const RangeFn& fn, int64_t grain = 1);

  // Runs fn(thread_index) once on each thread.
  void run_on_all(const std::function<void(int)>& fn);

  // The process-wide pool: TESSERA_THREADS or the hardware thread count.
  static ThreadPool& global();

 private:
  void worker_loop(int index);
  void dispatch(const std::function<void(int)>& task);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::mutex dispatch_mu_;
  const std::function<void(int)>* task_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace tessera
