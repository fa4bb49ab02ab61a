// A fixed pool of worker threads for data-parallel loops (the CPU kernels' only threading).
// A parallel region is a list of tasks (parallel_for: one contiguous range per thread;
// parallel_dynamic: fixed-size chunks) that the caller's thread and the workers claim one at a
// time with an atomic compare-and-swap, so a pool of size 1 runs everything inline, and a worker
// that another process keeps off its core does not hold the region up: the caller claims the
// tasks it has not started and returns as soon as every task is done.
// Decode issues thousands of short regions per second, so a dispatch is a few atomic stores that
// spinning workers see within ~100 ns; workers idle for the spin time (default 200 us) sleep on a
// futex and are woken only when they are asleep.
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

  // threads <= 1: everything runs on the caller's thread. spin_us: how long an idle worker spins
  // before it sleeps.
  explicit ThreadPool(int threads, int64_t spin_us = 200);
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

  // Runs fn(i) once for each i in [0, size()), spread over whichever threads are free.
  void run_on_all(const std::function<void(int)>& fn);

  // True inside a task of any pool (nested parallel calls run inline there).
  static bool in_task();

  // The process-wide pool, started at its first use with the options set_global_options()
  // registered (the CPU backend's tuning, TESSERA_CPU_TUNING threads= and spin_us=); without
  // them, or with threads 0, the hardware thread count.
  static ThreadPool& global();
  struct Options {
    int threads = 0;  // 0: the hardware thread count
    int64_t spin_us = 200;
  };
  // Where global() takes its options from, read once when it starts (core reads no environment:
  // backend/cpu/cpu_tuning.cpp registers its parser during static initialisation). Returns true.
  static bool set_global_options(Options (*source)());

 private:
  // fn(task, thread_index)
  using TaskFn = std::function<void(int64_t, int)>;
  void worker_loop(int index);
  void dispatch(int64_t tasks, const TaskFn& fn);
  void run_tasks(uint32_t gen, int thread);

  std::vector<std::thread> workers_;
  std::atomic<bool> busy_{false};  // one dispatch at a time (callers from several threads queue)
  // Region g's task count and function live in slot g & 1: a worker still looking at region g
  // after it ended reads its own slot while the caller fills the other one for g + 1.
  struct Slot {
    int64_t tasks = 0;
    const TaskFn* fn = nullptr;
  };
  Slot slots_[2];
  std::atomic<uint64_t> claim_{0};       // (generation << 32) | next task to claim
  std::atomic<int64_t> done_{0};         // tasks of the current region finished
  std::atomic<uint32_t> generation_{0};  // the current region; futex word the workers sleep on
  uint32_t last_gen_ = 0;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  int64_t spin_ns_ = 200000;
};

}  // namespace tessera
