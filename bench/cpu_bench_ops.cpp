// Op micro-benchmarks of the CPU backend on the Gemma-3-1B shapes (hidden 1152, 4 q heads, 1 KV
// head of 256, intermediate 6912, vocab 262144), through the ComputeBackend interface exactly as
// the model calls it, on all pool threads. Each figure is the median of `reps` timed loops.
#include <sys/resource.h>
#include <time.h>

#include <cstdio>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/simd_kernels.h"
#include "core/thread_pool.h"
#include "cpu_bench_util.h"

namespace tessera::bench {

double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

void fill_random(float* p, int64_t n, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] =
        static_cast<float>(static_cast<int64_t>(s >> 40) - (1 << 23)) / static_cast<float>(1 << 23);
  }
}

void fill_random_bf16(uint16_t* p, int64_t n, uint64_t seed) {
  ThreadPool::global().parallel_for(n, [&](int64_t b, int64_t e, int) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(b);
    for (int64_t i = b; i < e; ++i) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const float v = static_cast<float>(static_cast<int64_t>(s >> 40) - (1 << 23)) / (1 << 23);
      p[i] = f32_to_bf16(v * 0.05f);
    }
  });
}

namespace {

struct HostWeight {
  std::vector<uint16_t> h;
  std::vector<float> f;
  HostTensor info;
};

std::unique_ptr<Weight> make_weight(ComputeBackend& be, int64_t rows, int64_t cols, DType dt,
                                    uint64_t seed) {
  HostWeight hw;
  hw.info.name = "bench";
  hw.info.dtype = dt;
  hw.info.shape = {rows, cols};
  if (dt == DType::bf16) {
    hw.h.resize(static_cast<size_t>(rows * cols));
    fill_random_bf16(hw.h.data(), rows * cols, seed);
    hw.info.data = hw.h.data();
  } else {
    hw.f.resize(static_cast<size_t>(rows * cols));
    fill_random(hw.f.data(), rows * cols, seed);
    hw.info.data = hw.f.data();
  }
  const HostTensor* parts[] = {&hw.info};
  return be.upload_weight(parts, dt, "bench weight");
}

Tensor host_tensor(std::vector<float>& store, int64_t rows, int64_t cols, uint64_t seed) {
  store.resize(static_cast<size_t>(rows * cols));
  fill_random(store.data(), rows * cols, seed);
  return Tensor{store.data(), DType::f32, rows, cols, cols};
}

const char* path_name(cpu::LinearPath p) {
  switch (p) {
    case cpu::LinearPath::fma:
      return "panels, fp32 FMA";
    case cpu::LinearPath::dpbf16:
      return "panels, vdpbf16ps";
    case cpu::LinearPath::onednn:
      return "oneDNN sgemm";
    default:
      return "automatic";
  }
}

void bench_pool(int reps) {
  ThreadPool& pool = ThreadPool::global();
  const int n = 20000;
  volatile int64_t sink = 0;
  const double t = time_median(reps, [&] {
    for (int i = 0; i < n; ++i)
      pool.parallel_for(2, [&](int64_t b, int64_t, int) { sink = sink + b; });
  });
  std::printf("  thread pool: %.2f us per empty parallel_for over %d threads\n", t / n * 1e6,
              pool.size());
}

void bench_gemv(ComputeBackend& be, int reps) {
  struct Shape {
    const char* name;
    int64_t n, k;
  };
  const Shape shapes[] = {{"qkv", 1536, 1152},
                          {"o", 1152, 1024},
                          {"gate_up", 13824, 1152},
                          {"down", 1152, 6912},
                          {"lm_head", 262144, 1152}};
  std::printf("  linear, 1 row (decode GEMV), bf16 weights:\n");
  std::vector<float> xs, os;
  for (const Shape& s : shapes) {
    auto w = make_weight(be, s.n, s.k, DType::bf16, 7);
    Tensor x = host_tensor(xs, 1, s.k, 1);
    Tensor out = host_tensor(os, 1, s.n, 2);
    const double bytes = static_cast<double>(s.n * s.k * 2);
    for (auto p : {cpu::LinearPath::fma, cpu::LinearPath::dpbf16}) {
      cpu::set_linear_path(p);
      // Small weights fit the last-level cache; loop enough to measure.
      const int inner =
          static_cast<int>(std::max<int64_t>(1, 200000000 / static_cast<int64_t>(bytes)));
      const double t = time_median(reps,
                                   [&] {
                                     for (int i = 0; i < inner; ++i) be.linear(x, *w, nullptr, out);
                                   }) /
                       inner;
      std::printf("    %-8s [%6lld x %4lld] %-22s %8.3f ms  %6.1f GB/s%s\n", s.name,
                  static_cast<long long>(s.n), static_cast<long long>(s.k), path_name(p), t * 1e3,
                  bytes / t / 1e9, inner > 1 ? "  (cache-warm loop)" : "");
    }
  }
  cpu::set_linear_path(cpu::LinearPath::automatic);
  {
    auto w = make_weight(be, 13824, 1152, DType::f32, 7);
    Tensor x = host_tensor(xs, 1, 1152, 1);
    Tensor out = host_tensor(os, 1, 13824, 2);
    const double bytes = 13824.0 * 1152 * 4;
    const double t = time_median(reps, [&] { be.linear(x, *w, nullptr, out); });
    std::printf("    gate_up  [ 13824 x 1152] f32 weights, gemv      %8.3f ms  %6.1f GB/s\n",
                t * 1e3, bytes / t / 1e9);
  }
}

void bench_linear_rows(ComputeBackend& be, int reps) {
  std::printf("  linear by rows of x, bf16 weights: ms and GFLOP/s per path:\n");
  std::vector<float> xs, os;
  struct Shape {
    const char* name;
    int64_t n, k;
  };
  for (const Shape& s : {Shape{"gate_up", 13824, 1152}, Shape{"down", 1152, 6912}}) {
    auto w = make_weight(be, s.n, s.k, DType::bf16, 9);
    for (int M : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}) {
      Tensor x = host_tensor(xs, M, s.k, 3);
      Tensor out = host_tensor(os, M, s.n, 4);
      std::printf("    %-8s M=%4d", s.name, M);
      for (auto p : {cpu::LinearPath::fma, cpu::LinearPath::dpbf16, cpu::LinearPath::onednn}) {
        cpu::set_linear_path(p);
        const double t = time_median(reps, [&] { be.linear(x, *w, nullptr, out); });
        std::printf("  %s %8.3f ms %5.0f",
                    p == cpu::LinearPath::fma      ? "fma"
                    : p == cpu::LinearPath::dpbf16 ? "dpbf16"
                                                   : "onednn",
                    t * 1e3, 2.0 * M * s.n * s.k / t / 1e9);
      }
      cpu::set_linear_path(cpu::LinearPath::automatic);
      std::printf("\n");
    }
  }
}

void bench_attention(ComputeBackend& be, int reps) {
  const int nh = 4, nkv = 1, hd = 256, bs = 16;
  std::printf("  attention (4 q heads, 1 KV head of 256, bf16 KV):\n");
  struct Case {
    int tokens, ctx;
  };
  for (const Case c :
       {Case{1, 128}, Case{1, 512}, Case{1, 2048}, Case{1, 8192}, Case{128, 128}, Case{512, 512}}) {
    const int blocks = (c.ctx + bs - 1) / bs;
    std::vector<uint16_t> k(static_cast<size_t>(blocks) * bs * hd), v(k.size());
    fill_random_bf16(k.data(), static_cast<int64_t>(k.size()), 11);
    fill_random_bf16(v.data(), static_cast<int64_t>(v.size()), 12);
    KvLayerView kv{k.data(), v.data(), DType::bf16, blocks, bs, nkv, hd};
    std::vector<int32_t> table(blocks), pos(c.tokens), seq(c.tokens, 0), slots(c.tokens);
    for (int i = 0; i < blocks; ++i) table[i] = i;
    for (int t = 0; t < c.tokens; ++t) pos[t] = slots[t] = c.ctx - c.tokens + t;
    std::vector<int32_t> q_start{0}, q_len{c.tokens}, kv_len{c.ctx};
    BatchView b;
    b.num_tokens = c.tokens;
    b.num_seqs = 1;
    b.tokens = pos.data();
    b.positions = pos.data();
    b.token_seq = seq.data();
    b.seq_q_start = q_start.data();
    b.seq_q_len = q_len.data();
    b.seq_kv_len = kv_len.data();
    b.max_q_len = c.tokens;
    b.max_kv_len = c.ctx;
    b.num_groups = 1;
    b.groups[0] = {table.data(), slots.data(), blocks};
    std::vector<float> qs, os;
    Tensor qkv = host_tensor(qs, c.tokens, (nh + 2 * nkv) * hd, 13);
    for (float& f : qs) f *= 0.2f;
    Tensor out = host_tensor(os, c.tokens, nh * hd, 14);
    const double t = time_median(
        reps, [&] { be.attention(qkv, nh, nkv, hd, kv, b, 0, 1.0f / 16, 0, 0.f, out); });
    std::printf("    %4d token(s) over %5d keys: %8.3f ms\n", c.tokens, c.ctx, t * 1e3);
  }
}

void bench_small_ops(ComputeBackend& be, int reps) {
  std::printf("  small ops (one decode row unless noted):\n");
  std::vector<float> xs, ws, os, rs, gs, qs, inv;
  const int inner = 1000;
  auto report = [&](const char* name, double t) {
    std::printf("    %-34s %8.2f us\n", name, t / inner * 1e6);
  };
  Tensor x = host_tensor(xs, 1, 1152, 1), w = host_tensor(ws, 1, 1152, 2);
  Tensor out = host_tensor(os, 1, 1152, 3), res = host_tensor(rs, 1, 1152, 4);
  report("rms_norm [1 x 1152]", time_median(reps, [&] {
           for (int i = 0; i < inner; ++i) be.rms_norm(x, w, 1e-6f, out);
         }));
  report("add_rms_norm [1 x 1152]", time_median(reps, [&] {
           for (int i = 0; i < inner; ++i) be.add_rms_norm(res, x, &w, &w, 1e-6f, out);
         }));
  for (int rows : {1, 128}) {
    Tensor gu = host_tensor(gs, rows, 2 * 6912, 5);
    std::vector<float> a(static_cast<size_t>(rows) * 6912);
    Tensor at{a.data(), DType::f32, rows, 6912, 6912};
    const int n = rows == 1 ? inner : inner / 50;
    const double t = time_median(reps, [&] {
      for (int i = 0; i < n; ++i) be.gated_act(gu, Activation::gelu_tanh, at);
    });
    std::printf("    gated_act gelu_tanh [%3d x 6912]        %8.2f us\n", rows, t / n * 1e6);
  }
  Tensor qkv = host_tensor(qs, 1, 6 * 256, 6);
  // Unit norm weights: the op runs in place 1000 times, and random weights would shrink the
  // values into subnormals.
  Tensor nw = host_tensor(ws, 1, 256, 7);
  for (float& v : ws) v = 1.f;
  Tensor iv = host_tensor(inv, 1, 128, 8);
  int32_t pos = 100;
  report("qk_norm_rope [1 x 6 heads x 256]", time_median(reps, [&] {
           for (int i = 0; i < inner; ++i)
             be.qk_norm_rope(qkv, 4, 1, 256, &nw, &nw, 1e-6f, &pos, iv);
         }));
  std::vector<float> lg;
  Tensor logits = host_tensor(lg, 1, 262144, 9);
  SampleBatch sb;
  sb.rows.resize(1);
  SampleOutput so;
  const double t = time_median(reps, [&] {
    for (int i = 0; i < 100; ++i) be.sample(logits, sb, so);
  });
  std::printf("    %-34s %8.2f us\n", "sample greedy [1 x 262144]", t / 100 * 1e6);
}

// One thread, timed in thread CPU seconds: the panel kernel's efficiency whatever else shares
// the machine (other processes only stretch the wall time). Peak fp32 FMA on one core is
// 2 x 16 lanes x 2 flops per cycle.
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void bench_kernel(ComputeBackend& be, int reps) {
  if (cpu::active_isa() != cpu::Isa::avx512) return;
  std::printf("  panel kernel on one thread, per CPU second (AVX-512, fp32 FMA, bf16 weights):\n");
  struct Shape {
    const char* name;
    int64_t n, k;
  };
  std::vector<float> xs, os, xp;
  for (const Shape& s : {Shape{"gate_up", 13824, 1152}, Shape{"down", 1152, 6912}}) {
    auto w = make_weight(be, s.n, s.k, DType::bf16, 9);
    const auto& cw = static_cast<const cpu::CpuWeight&>(*w);
    for (int M : {1, 4, 12, 128, 512}) {
      host_tensor(xs, M, s.k, 3);
      host_tensor(os, M, s.n, 4);
      cpu::LinArgs a;
      a.w = cw.data();
      a.w_dtype = DType::bf16;
      a.K = s.k;
      a.N = s.n;
      a.panel_elems = cw.panel_elems;
      a.x = xs.data();
      a.x_stride = s.k;
      a.M = M;
      a.out = os.data();
      a.out_stride = s.n;
      double pack_s = 0;
      if (M >= cpu::avx512::packed_x_min_rows()) {
        xp.resize(static_cast<size_t>(M * (s.k + 1) / 2 * 2 + M * 2));
        std::vector<double> tp;
        for (int r = 0; r < reps; ++r) {
          const double c0 = thread_cpu_s();
          cpu::avx512::pack_x(xs.data(), s.k, M, s.k, 0, (M + 11) / 12, xp.data());
          tp.push_back(thread_cpu_s() - c0);
        }
        pack_s = median(tp);
        a.xp = xp.data();
      }
      std::vector<double> t;
      for (int r = 0; r < reps + 1; ++r) {
        const double c0 = thread_cpu_s();
        cpu::avx512::linear_panels(a, 0, cw.panels);
        if (r > 0) t.push_back(thread_cpu_s() - c0);
      }
      const double sec = median(t);
      // The same split in two halves of the panels over the pool (wall time).
      const double wall = time_median(reps, [&] {
        ThreadPool::global().parallel_for(
            cw.panels, [&](int64_t p0, int64_t p1, int) { cpu::avx512::linear_panels(a, p0, p1); },
            4);
      });
      // And linear() itself (packing x, dynamic tasks, K blocks).
      Tensor xt{xs.data(), DType::f32, M, s.k, s.k}, ot{os.data(), DType::f32, M, s.n, s.n};
      cpu::set_linear_path(cpu::LinearPath::fma);
      const double full = time_median(reps, [&] { be.linear(xt, *w, nullptr, ot); });
      cpu::set_linear_path(cpu::LinearPath::automatic);
      std::printf(
          "    %-8s M=%4d  %8.3f ms  %6.1f GFLOP/s  %6.1f GB/s of weights"
          "   | %d threads, halves: %6.1f, linear(): %6.1f GFLOP/s (wall); pack x %.3f ms\n",
          s.name, M, sec * 1e3, 2.0 * M * s.n * s.k / sec / 1e9, 2.0 * s.n * s.k / sec / 1e9,
          ThreadPool::global().size(), 2.0 * M * s.n * s.k / wall / 1e9,
          2.0 * M * s.n * s.k / full / 1e9, pack_s * 1e3);
    }
  }
}

}  // namespace

void run_op_benchmarks(int reps, const std::string& only) {
  std::printf("op micro-benchmarks (median of %d):\n", reps);
  auto be = make_cpu_backend();
  auto want = [&](const char* g) { return only.empty() || only == g; };
  if (want("pool")) bench_pool(reps);
  if (want("small")) bench_small_ops(*be, reps);
  if (want("attention")) bench_attention(*be, reps);
  if (want("gemv")) bench_gemv(*be, reps);
  if (want("rows")) bench_linear_rows(*be, reps);
  if (want("kernel")) bench_kernel(*be, reps);
}

}  // namespace tessera::bench
