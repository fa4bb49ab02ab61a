#include "core/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace tessera {

namespace {
thread_local bool t_in_pool_task = false;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

ThreadPool::ThreadPool(int threads, int64_t spin_us)
    : spin_ns_(std::max<int64_t>(spin_us, 0) * 1000) {
  threads = std::max(threads, 1);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

bool ThreadPool::in_task() {
  return t_in_pool_task;
}

// Claims and runs tasks of region `gen` until none is left (or the region is over).
void ThreadPool::run_tasks(uint32_t gen, int thread) {
  const Slot& slot = slots_[gen & 1];
  uint64_t c = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<uint32_t>(c >> 32) != gen) return;
    const int64_t task = static_cast<int64_t>(c & 0xffffffffu);
    if (task >= slot.tasks) return;
    // Success means region `gen` was still current, so slot and fn are its own.
    if (claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      (*slot.fn)(task, thread);
      done_.fetch_add(1, std::memory_order_release);
      c = claim_.load(std::memory_order_acquire);
    }
  }
}

void ThreadPool::worker_loop(int index) {
  uint32_t seen = 0;
  t_in_pool_task = true;
  for (;;) {
    // Spin first: in decode the next parallel region follows within microseconds.
    uint32_t gen = generation_.load(std::memory_order_acquire);
    if (gen == seen) {
      const int64_t deadline = now_ns() + spin_ns_;
      for (int i = 0; gen == seen; ++i) {
        _mm_pause();
        gen = generation_.load(std::memory_order_acquire);
        if ((i & 63) == 63 && now_ns() > deadline) break;
      }
    }
    if (gen == seen) {
      // Announce the sleep before the final check; dispatch() bumps the generation before it
      // reads sleepers_ (both seq_cst), so one of the two sees the other.
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      while ((gen = generation_.load(std::memory_order_seq_cst)) == seen) generation_.wait(seen);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    run_tasks(gen, index);
  }
}

void ThreadPool::dispatch(int64_t tasks, const TaskFn& fn) {
  // Another thread of the process may be using the pool; wait for it.
  bool expected = false;
  while (!busy_.compare_exchange_weak(expected, true, std::memory_order_acquire)) {
    expected = false;
    _mm_pause();
  }
  const uint32_t gen = ++last_gen_;
  Slot& slot = slots_[gen & 1];
  slot.tasks = tasks;
  slot.fn = &fn;
  done_.store(0, std::memory_order_relaxed);
  claim_.store(static_cast<uint64_t>(gen) << 32, std::memory_order_release);
  generation_.store(gen, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
  t_in_pool_task = true;
  run_tasks(gen, 0);
  t_in_pool_task = false;
  while (done_.load(std::memory_order_acquire) != tasks) _mm_pause();
  busy_.store(false, std::memory_order_release);
}

void ThreadPool::run_on_all(const std::function<void(int)>& fn) {
  if (workers_.empty() || t_in_pool_task) {
    for (int i = 0; i < size(); ++i) fn(i);
    return;
  }
  const TaskFn task = [&](int64_t i, int) { fn(static_cast<int>(i)); };
  dispatch(size(), task);
}

void ThreadPool::parallel_for(int64_t n, const RangeFn& fn, int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = (n + grain - 1) / grain;
  const int threads = static_cast<int>(std::min<int64_t>(size(), chunks));
  if (threads <= 1 || t_in_pool_task) {
    fn(0, n, 0);
    return;
  }
  const TaskFn task = [&](int64_t i, int thread) {
    const int64_t c0 = chunks * i / threads, c1 = chunks * (i + 1) / threads;
    const int64_t b = c0 * grain, e = std::min(n, c1 * grain);
    if (b < e) fn(b, e, thread);
  };
  dispatch(threads, task);
}

void ThreadPool::parallel_dynamic(int64_t n, int64_t chunk, const RangeFn& fn) {
  if (n <= 0) return;
  chunk = std::max<int64_t>({chunk, 1, (n >> 31) + 1});  // task indices fit 32 bits
  if (size() == 1 || n <= chunk || t_in_pool_task) {
    for (int64_t b = 0; b < n; b += chunk) fn(b, std::min(n, b + chunk), 0);
    return;
  }
  const TaskFn task = [&](int64_t i, int thread) {
    fn(i * chunk, std::min(n, (i + 1) * chunk), thread);
  };
  dispatch((n + chunk - 1) / chunk, task);
}

namespace {
ThreadPool::Options (*g_options)() = nullptr;
}

bool ThreadPool::set_global_options(Options (*source)()) {
  g_options = source;
  return true;
}

ThreadPool& ThreadPool::global() {
  static const Options o = g_options ? g_options() : Options{};
  static ThreadPool pool(o.threads > 0
                             ? o.threads
                             : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())),
                         o.spin_us);
  return pool;
}

}  // namespace tessera
