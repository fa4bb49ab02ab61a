#include "core/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace tessera {

namespace {
thread_local bool t_in_pool_task = false;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  threads = std::max(threads, 1);
  if (const char* env = std::getenv("TESSERA_SPIN_US")) {
    const long v = std::atol(env);
    if (v >= 0) spin_ns_ = static_cast<int64_t>(v) * 1000;
  }
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

bool ThreadPool::in_task() { return t_in_pool_task; }

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
    (*task_)(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::dispatch(const std::function<void(int)>& task) {
  // Another thread of the process may be using the pool; wait for it.
  bool expected = false;
  while (!busy_.compare_exchange_weak(expected, true, std::memory_order_acquire)) {
    expected = false;
    _mm_pause();
  }
  task_ = &task;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);  // publishes task_ and pending_
  if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
  t_in_pool_task = true;
  task(0);
  t_in_pool_task = false;
  while (pending_.load(std::memory_order_acquire) != 0) _mm_pause();
  task_ = nullptr;
  busy_.store(false, std::memory_order_release);
}

void ThreadPool::run_on_all(const std::function<void(int)>& fn) {
  if (workers_.empty() || t_in_pool_task) {
    for (int i = 0; i < size(); ++i) fn(i);
    return;
  }
  dispatch(fn);
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
  std::function<void(int)> task = [&](int t) {
    if (t >= threads) return;
    int64_t c0 = chunks * t / threads, c1 = chunks * (t + 1) / threads;
    int64_t b = c0 * grain, e = std::min(n, c1 * grain);
    if (b < e) fn(b, e, t);
  };
  dispatch(task);
}

void ThreadPool::parallel_dynamic(int64_t n, int64_t chunk, const RangeFn& fn) {
  if (n <= 0) return;
  chunk = std::max<int64_t>(chunk, 1);
  if (size() == 1 || n <= chunk || t_in_pool_task) {
    for (int64_t b = 0; b < n; b += chunk) fn(b, std::min(n, b + chunk), 0);
    return;
  }
  std::atomic<int64_t> next{0};
  std::function<void(int)> task = [&](int t) {
    for (;;) {
      const int64_t b = next.fetch_add(chunk, std::memory_order_relaxed);
      if (b >= n) return;
      fn(b, std::min(n, b + chunk), t);
    }
  };
  dispatch(task);
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool([] {
    if (const char* env = std::getenv("TESSERA_THREADS")) {
      int v = std::atoi(env);
      if (v > 0) return v;
    }
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }());
  return pool;
}

}  // namespace tessera
