#include "core/thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include <immintrin.h>

namespace tessera {

namespace {
thread_local bool t_in_pool_task = false;
}

ThreadPool::ThreadPool(int threads) {
  threads = std::max(threads, 1);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  t_in_pool_task = true;
  for (;;) {
    // Spin for a short while: the next parallel region usually follows within microseconds.
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < 20000 && !stop_.load(std::memory_order_relaxed);
         ++spin) {
      _mm_pause();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] {
        return stop_.load() || generation_.load(std::memory_order_acquire) != seen;
      });
      if (stop_.load()) return;
      gen = generation_.load(std::memory_order_acquire);
    }
    if (stop_.load()) return;
    seen = gen;
    (*task_)(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::dispatch(const std::function<void(int)>& task) {
  std::lock_guard<std::mutex> dlk(dispatch_mu_);
  task_ = &task;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_release);
  {
    std::lock_guard<std::mutex> lk(mu_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  cv_.notify_all();
  t_in_pool_task = true;
  task(0);
  t_in_pool_task = false;
  while (pending_.load(std::memory_order_acquire) != 0) _mm_pause();
  task_ = nullptr;
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
