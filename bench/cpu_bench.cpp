// tessera_cpu_bench: CPU decode and prefill speed of a model (Gemma-3-1B in bf16 by default) on
// all the threads of the pool, with where the time goes, plus op micro-benchmarks.
//   tessera_cpu_bench [--model DIR] [--prompt 128] [--decode 64] [--reps 3] [--no-ops] [--ops-only]
//                     [--only pool|small|attention|gemv|rows|kernel] [--quantize 4|8]
//                     [--group-size 64] [--no-profile]
// --quantize quantizes the dense matrices at load (MLX affine, as `tessera quantize` would);
// --no-profile skips the per-op profile of one decode and one prefill run.
// Figures are medians over --reps runs (other processes share the cores). Decode GB/s counts the
// bytes of weights one token reads (every linear weight once, the tied LM head included).
#include <immintrin.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "core/thread_pool.h"
#include "cpu_bench_util.h"
#include "engine/direct_runner.h"
#include "io/model_dir.h"
#include "models/model.h"
#include "tessera/error.h"

namespace tessera::bench {
namespace {

struct Options {
  std::string model = "/tmp/g1b";
  int prompt = 128, decode = 64, reps = 3;
  int quantize_bits = 0, group_size = 64;  // LoadOptions::quantize_bits / quantize_group_size
  bool ops = true, model_runs = true, profile = true;
  std::string only;  // one op group
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tessera_cpu_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    auto next_int = [&]() {
      const std::string v = next();
      char* end = nullptr;
      const long x = std::strtol(v.c_str(), &end, 10);
      if (*end != '\0' || x <= 0) {
        std::fprintf(stderr, "tessera_cpu_bench: %s wants a positive integer, got '%s'\n",
                     a.c_str(), v.c_str());
        std::exit(2);
      }
      return static_cast<int>(x);
    };
    if (a == "--model")
      o.model = next();
    else if (a == "--prompt")
      o.prompt = next_int();
    else if (a == "--decode")
      o.decode = next_int();
    else if (a == "--reps")
      o.reps = next_int();
    else if (a == "--quantize")
      o.quantize_bits = next_int();
    else if (a == "--group-size")
      o.group_size = next_int();
    else if (a == "--no-profile")
      o.profile = false;
    else if (a == "--no-ops")
      o.ops = false;
    else if (a == "--ops-only")
      o.model_runs = false;
    else if (a == "--only") {
      o.only = next();
      o.model_runs = false;
    } else {
      std::fprintf(stderr,
                   "usage: tessera_cpu_bench [--model DIR] [--prompt N] [--decode N] [--reps N] "
                   "[--no-ops] [--ops-only] [--only pool|small|attention|gemv|rows|kernel] "
                   "[--quantize 4|8] [--group-size N] [--no-profile]\n"
                   "(unknown option '%s')\n",
                   a.c_str());
      std::exit(2);
    }
  }
  return o;
}

// Transparent huge pages backing this process (the weights ask for them).
std::string anon_huge_pages() {
  std::ifstream f("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("AnonHugePages:", 0) == 0) return line.substr(14);
  return " unknown";
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// Sums [b, e) of buf as 4 interleaved streams with AVX2 loads and software prefetch (the access
// pattern that read fastest in the NOTES-cpu.md experiments).
__attribute__((target("avx2"))) uint64_t sum_avx2(const uint64_t* buf, int64_t b, int64_t e) {
  const int64_t part = (e - b) / 4 / 8 * 8;
  __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                  _mm256_setzero_si256()};
  for (int64_t i = 0; i < part; i += 8)
    for (int j = 0; j < 4; ++j) {
      const uint64_t* p = buf + b + j * part + i;
      _mm_prefetch(reinterpret_cast<const char*>(p) + 2048, _MM_HINT_T0);
      s[j] = _mm256_add_epi64(s[j], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
      s[j] = _mm256_add_epi64(s[j], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 4)));
    }
  alignas(32) uint64_t out[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(out),
                     _mm256_add_epi64(_mm256_add_epi64(s[0], s[1]), _mm256_add_epi64(s[2], s[3])));
  return out[0] + out[1] + out[2] + out[3];
}

// What all threads can read from DRAM: a 1 GiB buffer summed once per run (the decode ceiling).
double read_bandwidth(int reps) {
  const int64_t n = (int64_t{1} << 30) / 8;
  std::vector<uint64_t> buf(static_cast<size_t>(n));
  ThreadPool::global().parallel_for(n, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) buf[i] = static_cast<uint64_t>(i);
  });
  const bool avx2 = __builtin_cpu_supports("avx2");
  std::atomic<uint64_t> sink{0};
  const double t = time_median(reps, [&] {
    ThreadPool::global().parallel_for(n, [&](int64_t b, int64_t e, int) {
      uint64_t s = 0;
      if (avx2) {
        s = sum_avx2(buf.data(), b, e);
      } else {
        for (int64_t i = b; i < e; ++i) s += buf[i];
      }
      sink += s;
    });
  });
  return static_cast<double>(n * 8) / t / 1e9;
}

int argmax_row(const std::vector<float>& v) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(v.size()); ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

void print_profile(const TimingBackend& tb, int steps, double step_s, const char* what) {
  std::printf("  %s, per step (one profiled run; ops synchronised):\n", what);
  std::vector<std::pair<double, std::string>> rows;
  double total = 0;
  for (const auto& [k, v] : tb.totals) {
    rows.push_back({v, k});
    total += v;
  }
  std::sort(rows.rbegin(), rows.rend());
  for (const auto& [v, k] : rows)
    std::printf("    %-28s %8.3f ms  %5.1f%%  (%lld calls)\n", k.c_str(), v / steps * 1e3,
                100.0 * v / steps / step_s, static_cast<long long>(tb.counts.at(k) / steps));
  std::printf("    %-28s %8.3f ms  %5.1f%%\n", "(ops total)", total / steps * 1e3,
              100.0 * total / steps / step_s);
}

void run_model(const Options& o) {
  auto timing = std::make_unique<TimingBackend>(make_cpu_backend());
  TimingBackend& tb = *timing;
  ModelDir dir(o.model);
  const double t_load = now_s();
  LoadOptions lo;
  lo.quantize_bits = o.quantize_bits;
  lo.quantize_group_size = o.group_size;
  std::unique_ptr<Model> model = load_model(dir, tb, lo);
  const ModelInfo& info = model->info();
  std::string held = info.weight_dtype == DType::bf16 ? "bf16" : "f32";
  if (o.quantize_bits != 0)
    held += " + " + std::to_string(o.quantize_bits) + "-bit g" + std::to_string(o.group_size);
  std::printf(
      "model %s: %s, %d layers, hidden %d, vocab %d, %lld params, %.2f GB as %s "
      "(loaded in %.1f s; weight bytes %zu)\n",
      o.model.c_str(), info.architecture.c_str(), info.num_layers, info.hidden_size,
      info.vocab_size, static_cast<long long>(info.parameter_count),
      static_cast<double>(info.weight_bytes) / 1e9, held.c_str(), now_s() - t_load,
      info.weight_bytes);
  std::printf("anonymous huge pages in use:%s\n", anon_huge_pages().c_str());
  // Bytes of weights one decode token reads: every linear weight (the embedding row is noise;
  // a tied LM head reads the whole table).
  const double bytes_per_token = static_cast<double>(info.weight_bytes);

  std::vector<int32_t> prompt(static_cast<size_t>(o.prompt));
  uint64_t s = 12345;
  for (auto& t : prompt) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    t = static_cast<int32_t>((s >> 33) % static_cast<uint64_t>(info.vocab_size));
  }
  DirectRunner runner(*model, o.prompt + o.decode + 8);
  std::vector<std::vector<int32_t>> batch(1);

  // Prefill. Besides wall time, the CPU seconds per run over the thread count: on a machine
  // other processes share, wall / (cpu / threads) says how much of the cores this run had.
  const int threads = ThreadPool::global().size();
  std::vector<double> pre, pre_cpu;
  for (int r = 0; r < o.reps + 1; ++r) {
    runner.reset();
    batch[0] = prompt;
    const double t0 = now_s(), c0 = process_cpu_s();
    runner.step(batch, false);
    if (r > 0) {  // the first run warms up the pages and caches
      pre.push_back(now_s() - t0);
      pre_cpu.push_back((process_cpu_s() - c0) / threads);
    }
  }
  const double pre_s = median(pre), pre_c = median(pre_cpu);
  const double linear_flop =
      2.0 *
      static_cast<double>(info.parameter_count - int64_t{info.vocab_size} * info.hidden_size) *
      o.prompt;
  std::printf(
      "prefill %d tokens: %.1f ms, %.1f tokens/s, %.0f GFLOP/s in linear layers "
      "(median of %d; CPU-time/threads %.1f ms -> %.1f tokens/s)\n",
      o.prompt, pre_s * 1e3, o.prompt / pre_s, linear_flop / pre_s / 1e9, o.reps, pre_c * 1e3,
      o.prompt / pre_c);

  // Decode: greedy, one token per step, after a fresh prefill each run.
  std::vector<double> run_tps, step_med, run_cpu_tps;
  for (int r = 0; r < o.reps; ++r) {
    runner.reset();
    batch[0] = prompt;
    auto lg = runner.step(batch, false);
    int next = argmax_row(lg[0][0]);
    std::vector<double> steps;
    const double t0 = now_s(), c0 = process_cpu_s();
    for (int i = 0; i < o.decode; ++i) {
      batch[0] = {next};
      const double ts = now_s();
      lg = runner.step(batch, false);
      next = argmax_row(lg[0][0]);
      steps.push_back(now_s() - ts);
    }
    run_tps.push_back(o.decode / (now_s() - t0));
    run_cpu_tps.push_back(o.decode / ((process_cpu_s() - c0) / threads));
    step_med.push_back(median(steps));
  }
  const double tps = median(run_tps), step_s = median(step_med);
  std::printf(
      "decode %d tokens after a %d-token prompt: %.2f tokens/s (median of %d runs; median "
      "step %.2f ms), %.1f GB/s of weights (CPU-time/threads: %.2f tokens/s)\n",
      o.decode, o.prompt, tps, o.reps, step_s * 1e3, bytes_per_token * tps / 1e9,
      median(run_cpu_tps));

  // Where the time goes: one profiled decode run and one profiled prefill.
  if (!o.profile) return;
  runner.reset();
  batch[0] = prompt;
  auto lg = runner.step(batch, false);
  int next = argmax_row(lg[0][0]);
  tb.enabled = true;
  const int prof_steps = std::min(o.decode, 32);
  const double t0 = now_s();
  for (int i = 0; i < prof_steps; ++i) {
    batch[0] = {next};
    lg = runner.step(batch, false);
    next = argmax_row(lg[0][0]);
  }
  const double prof_step = (now_s() - t0) / prof_steps;
  tb.enabled = false;
  print_profile(tb, prof_steps, prof_step, "decode");
  tb.totals.clear();
  tb.counts.clear();
  runner.reset();
  batch[0] = prompt;
  tb.enabled = true;
  const double t1 = now_s();
  runner.step(batch, false);
  const double prof_pre = now_s() - t1;
  tb.enabled = false;
  print_profile(tb, 1, prof_pre, "prefill");
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) {
  using namespace tessera;
  using namespace tessera::bench;
  const Options o = parse(argc, argv);
  std::printf("tessera_cpu_bench: %s, %d threads, ISA %s\n", cpu_model().c_str(),
              ThreadPool::global().size(), cpu::isa_name(cpu::active_isa()));
  try {
    if (o.only.empty())
      std::printf("DRAM read bandwidth (1 GiB, all threads): %.1f GB/s\n", read_bandwidth(o.reps));
    if (o.model_runs) run_model(o);
    if (o.ops) run_op_benchmarks(o.reps, o.only);
  } catch (const Error& e) {
    std::fprintf(stderr, "tessera_cpu_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
