// A fixed pool of worker threads for data-parallel loops (the CPU kernels' only threading).
// parallel_for splits [0, n) into one contiguous range per thread; the caller's thread takes
// part, so a pool of size 1 runs everything inline. Decode issues thousands of short parallel
// regions per second, so a dispatch is one atomic increment that spinning workers see within
// ~100 ns; workers that find nothing to do for a while (TESSERA_SPIN_US, default 500 us) sleep on
// a futex and are woken only when they are asleep.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
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

  // Runs fn over [0, n) in chunks of `chunk` (the last may be short) that the threads take in
  // order as they finish the previous one: for uneven work (causal attention) or when another
  // process may preempt one of the threads.
  void parallel_dynamic(int64_t n, int64_t chunk, const RangeFn& fn);

  // Runs fn(thread_index) once on each thread.
  void run_on_all(const std::function<void(int)>& fn);

  // True inside a task of any pool (nested parallel calls run inline there).
  static bool in_task();

  // The process-wide pool: TESSERA_THREADS or the hardware thread count.
  static ThreadPool& global();

 private:
  void worker_loop(int index);
  void dispatch(const std::function<void(int)>& task);

  std::vector<std::thread> workers_;
  std::atomic<bool> busy_{false};  // one dispatch at a time (callers from several threads queue)
  const std::function<void(int)>* task_ = nullptr;
  std::atomic<uint32_t> generation_{0};  // bumped once per dispatch; futex word
  std::atomic<int> sleepers_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  int64_t spin_ns_ = 500000;
};

}  // namespace tessera
