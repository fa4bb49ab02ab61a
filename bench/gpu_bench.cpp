// tessera_gpu_bench: the standard workloads of bench/hf_peer.py on the CUDA backend, driven by a
// plain loop over KvPool + build_batch + model.forward + backend.sample (greedy, EOS ignored), on
// the same model directory the peer loads. Prints the figures, the ceilings measured in the same
// run (device-to-device copy, large bf16 GEMM), what each workload achieves against them, and
// writes everything as JSON.
//
//   tessera_gpu_bench --model DIR [--only decode_b1,prefill_4096] [--reps 3] [--json out.json]
//                     [--quantize 4|8 [--quantize-group 64]] [--no-graphs] [--crossover]
//                     [--decode-ops] [--lm-ops] [--sample-ops] [--quant-ops]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "backend/cuda/cuda_backend.h"
#include "engine/batch_builder.h"
#include "engine/kv_pool.h"
#include "io/model_dir.h"
#include "models/model.h"
#include "tessera/error.h"

using namespace tessera;
using json = nlohmann::json;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Microseconds per ComputeBackend::sample call (host-timed: it returns once the ids are on the
// host), median of `reps` after two warm-up calls, on random logits of 1, 8 and 128 rows x V.
void sampler_report(ComputeBackend& be, int V, int reps) {
  struct Cfg {
    const char* name;
    float temperature, top_p, min_p;
    int top_k;
  };
  const Cfg cfgs[] = {
      {"greedy", 0.f, 1.f, 0.f, 0},
      {"temperature 0.8", 0.8f, 1.f, 0.f, 0},
      {"0.8, top-p 0.95", 0.8f, 0.95f, 0.f, 0},
      {"0.8, top-p 0.95, min-p 0.05", 0.8f, 0.95f, 0.05f, 0},
      {"0.8, top-k 40, top-p 0.95, min-p 0.05 (CLI default)", 0.8f, 0.95f, 0.05f, 40},
      {"0.8, top-k 40", 0.8f, 1.f, 0.f, 40}};
  std::printf("\nsampler, V = %d (us per call, median of %d):\n", V, reps);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 3.f);
  for (int R : {1, 8, 128}) {  // 128: a decode_b128 step's rows, one block each
    std::vector<float> h(static_cast<size_t>(R) * V);
    for (float& x : h) x = nd(rng);
    DeviceArray lg = be.alloc_array(R, V, DType::f32, "sampler bench logits");
    be.copy_to_device(lg.view.data, h.data(), h.size() * sizeof(float));
    for (const Cfg& c : cfgs) {
      SampleBatch sb;
      for (int r = 0; r < R; ++r) {
        SampleParams p;
        p.temperature = c.temperature;
        p.top_p = c.top_p;
        p.min_p = c.min_p;
        p.top_k = c.top_k;
        p.seed = 1000 + r;
        sb.rows.push_back(p);
      }
      SampleOutput out;
      std::vector<double> ts;
      for (int i = 0; i < reps + 2; ++i) {
        for (SampleParams& p : sb.rows) p.step = i;
        const double t0 = now_s();
        be.sample(lg.view, sb, out);
        if (i >= 2) ts.push_back(now_s() - t0);
      }
      std::printf("  %3d row%s  %-52s %8.1f\n", R, R > 1 ? "s" : " ", c.name, 1e6 * median(ts));
    }
  }
}

struct Bench {
  Model& model;
  ComputeBackend& be;
  std::mt19937 rng{1234};
  size_t kv_in_use = 0;          // bytes of KV blocks held at the end of the last generate()
  int profile_step = -1;         // generate(): bracket this step for ncu (--profile-from-start off)
  bool profile_forward = false;  // forward_once(): bracket the forward
  // generate(): host seconds spent outside the sampler's wait (batch building, upload, graph
  // launch). Serial, the GPU sits idle for it between steps; pipelined, it overlaps the step.
  double host_outside_sample = 0;
  // generate(): issue step i + 1 (its tokens taken from step i's sample on the device) before
  // waiting for step i's ids, as the scheduler does; false (--serial): wait, then build the next.
  bool pipelined = true;
  // generate(): what each row samples with (greedy by default; --sample-default: the CLI's).
  SampleParams sampling{};

  std::vector<int32_t> tokens(int n) {
    std::uniform_int_distribution<int32_t> d(3, model.info().vocab_size - 1);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = d(rng);
    return t;
  }

  KvPoolOptions pool_opts(int seqs, int ctx, int step) {
    KvPoolOptions o;
    o.max_seqs = seqs;
    o.max_context = ctx;
    o.max_step_tokens = step;
    o.block_size = 16;
    return o;
  }

  // Greedy generation of `n_new` tokens for each prompt: one prefill forward over all prompts,
  // then one decode forward per token. Returns seconds. Pipelined, step i's ids reach the host
  // while step i + 1 runs (Scheduler: the same order of upload, sample_async and sample_wait).
  double generate(KvPool& pool, const std::vector<std::vector<int32_t>>& prompts, int n_new) {
    const int S = static_cast<int>(prompts.size());
    std::vector<std::unique_ptr<SequenceKv>> seqs;
    for (int s = 0; s < S; ++s) seqs.push_back(std::make_unique<SequenceKv>(pool));
    SampleBatch sb;
    sb.rows.assign(S, sampling);
    for (int s = 0; s < S; ++s) sb.rows[s].seed = 100 + s;
    SampleOutput out;
    std::vector<std::vector<int32_t>> step_tokens = prompts;
    be.synchronize();
    const double t0 = now_s();
    host_outside_sample = 0;
    for (int i = 0; i < n_new; ++i) {
      const double h0 = now_s();
      std::vector<BatchEntry> entries(S);
      const bool on_device = pipelined && i > 0;  // row s of the last sample
      static const int32_t placeholder = 0;
      for (int s = 0; s < S; ++s) {
        entries[s].tokens =
            on_device ? std::span<const int32_t>(&placeholder, 1) : std::span(step_tokens[s]);
        entries[s].sampled_row = on_device ? s : -1;
        if (!seqs[s]->reserve(static_cast<int>(entries[s].tokens.size())))
          throw tessera::Error(tessera::ErrorKind::out_of_memory, "bench: KV pool too small");
        entries[s].kv = seqs[s].get();
        entries[s].logits_last = true;
      }
      if (i == profile_step) cuda::profiler_range(true);
      HostBatch hb = build_batch(pool, entries);
      hb.greedy_ids = plain_greedy(sampling);  // as the scheduler sets it
      const ForwardOutput fo = model.forward(hb, pool.layers());
      if (i > 0) host_outside_sample += now_s() - h0;
      if (pipelined && i > 0) be.sample_wait(out);  // step i - 1's ids, while step i runs
      for (SampleParams& p : sb.rows) p.step = i;
      be.sample_async(fo.logits.rows_from(0, S), sb, fo.greedy_ids);
      if (!pipelined) be.sample_wait(out);
      if (i == profile_step) {
        cuda::profiler_range(false);
        profile_step = -1;
      }
      if (!pipelined)
        for (int s = 0; s < S; ++s) step_tokens[s].assign(1, out.ids[s]);
    }
    if (pipelined) be.sample_wait(out);
    be.synchronize();
    const double t = now_s() - t0;
    kv_in_use = 0;
    for (int g = 0; g < pool.num_groups(); ++g) {
      int layers = 0;
      for (int lg : model.kv_spec().layer_group) layers += lg == g;
      kv_in_use += static_cast<size_t>(pool.used_blocks(g)) * pool.block_size() * 2 * layers *
                   model.kv_spec().num_kv_heads * model.kv_spec().head_dim *
                   dtype_size(model.kv_spec().dtype);
    }
    return t;
  }

  // One forward over the prompts with last-position logits (and a greedy pick when `pick`).
  double forward_once(KvPool& pool, const std::vector<std::vector<int32_t>>& prompts, bool pick) {
    const int S = static_cast<int>(prompts.size());
    std::vector<std::unique_ptr<SequenceKv>> seqs;
    std::vector<BatchEntry> entries(S);
    for (int s = 0; s < S; ++s) {
      seqs.push_back(std::make_unique<SequenceKv>(pool));
      seqs[s]->reserve(static_cast<int>(prompts[s].size()));
      entries[s].kv = seqs[s].get();
      entries[s].tokens = prompts[s];
      entries[s].logits_last = true;
    }
    be.synchronize();
    if (profile_forward) cuda::profiler_range(true);
    const double t0 = now_s();
    HostBatch hb = build_batch(pool, entries);
    hb.greedy_ids = pick;
    const ForwardOutput fo = model.forward(hb, pool.layers());
    if (pick) {
      SampleBatch sb;
      sb.rows.assign(S, SampleParams{});
      SampleOutput out;
      be.sample_async(fo.logits.rows_from(0, S), sb, fo.greedy_ids);
      be.sample_wait(out);
    }
    be.synchronize();
    const double t = now_s() - t0;
    if (profile_forward) {
      cuda::profiler_range(false);
      profile_forward = false;
    }
    return t;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessera GPU benchmark (the hf_peer.py workloads)"};
  std::string model_dir, only, json_out;
  int reps = 3;
  bool no_graphs = false, crossover = false, decode_ops = false, serial = false;
  std::string profile;
  app.add_option("--model", model_dir, "Hugging Face model directory")->required();
  app.add_option("--only", only, "comma-separated workloads");
  app.add_option("--reps", reps, "timed repetitions (median), after one warm-up");
  app.add_option("--json", json_out, "write the results here");
  app.add_flag("--no-graphs", no_graphs, "run decode steps eagerly");
  app.add_flag("--serial", serial,
               "decode workloads wait for each step's ids before issuing the next step (not "
               "pipelined as the scheduler is)");
  app.add_flag("--crossover", crossover, "time GEMV vs cuBLASLt per layer shape and M");
  app.add_flag("--decode-ops", decode_ops,
               "time the decode step's GEMVs and attention per launch inside CUDA graphs");
  app.add_option("--profile", profile,
                 "bracket one step for ncu --profile-from-start off: decode_b1 (decode step 100) "
                 "or a forward workload (prefill_4096, ttft_512, classify_256x64)");
  bool no_ceilings = false, sample_ops = false, sample_default = false, lm_ops = false;
  bool ceilings_first = false, quant_ops = false;
  app.add_flag(
      "--sample-default", sample_default,
      "decode workloads sample at the CLI's default (temperature 0.8, top-k 40, top-p 0.95, "
      "min-p 0.05) instead of greedily");
  app.add_flag("--no-ceilings", no_ceilings, "skip the copy / GEMM ceiling measurements");
  app.add_flag("--sample-ops", sample_ops,
               "time the sampler per call (1, 8 and 128 rows of the model's vocabulary; greedy, "
               "temperature, top-p, top-p + min-p, the CLI's default, top-k)");
  app.add_flag("--lm-ops", lm_ops,
               "time gemma3-1b's LM head at M = 1 (final norm fused, with and without the greedy "
               "pick) inside CUDA graphs");
  app.add_flag("--quant-ops", quant_ops,
               "time the packed GEMV per launch at the 1B decode shapes (bits and group from "
               "--quantize, --quantize-group; 4 and 64 if not given)");
  app.add_flag("--ceilings-first", ceilings_first,
               "measure the ceilings before the workloads (as before run 25: decode_b1 then read "
               "~2% low, bench/NOTES-cuda.md run 25)");
  int quantize_bits = 0, quantize_group = 64;
  app.add_option("--quantize", quantize_bits,
                 "quantize the weights at load: 4 or 8 bits (MLX affine)");
  app.add_option("--quantize-group", quantize_group,
                 "the group size with --quantize (32, 64, 128)");
  CLI11_PARSE(app, argc, argv);
  reps = std::max(reps, 1);
  try {
    auto be = make_cuda_backend();
    if (!be) {
      std::fprintf(stderr, "tessera_gpu_bench: no CUDA device\n");
      return 1;
    }
    cuda::CudaTuning& tuning = *cuda::tuning(*be);
    if (no_graphs) tuning.graphs = false;
    json res;
    res["device"] = cuda::cuda_device_description();
    res["tuning"] = cuda::to_string(tuning);
    std::printf("device: %s\ntuning: %s\n", res["device"].get<std::string>().c_str(),
                res["tuning"].get<std::string>().c_str());
    // The ceilings and per-op timings run after the workloads: measured first in the same process
    // they left decode_b1 ~2% slower (1,151-1,164 vs 1,177-1,184 tok/s; allocating and freeing
    // their buffers' 4 GiB alone changed nothing, bench/NOTES-cuda.md run 25).
    // Without them the percentages use typical H200 figures (bench/NOTES-cuda.md).
    double copy_gbps = 4200;
    auto diagnostics = [&] {
      if (no_ceilings) {
        std::printf("ceilings: not measured (--no-ceilings); %% of ceiling uses 4200 GB/s\n");
      } else {
        copy_gbps = cuda::measure_copy_gbps(size_t{2} << 30, 10);
        const double gemm_tflops = cuda::measure_gemm_tflops(8192, 10);
        res["ceilings"] = {{"copy_gbps", copy_gbps}, {"gemm_bf16_tflops", gemm_tflops}};
        std::printf("ceilings: d2d copy %.0f GB/s (read+write), bf16 GEMM 8192^3 %.0f TFLOP/s\n",
                    copy_gbps, gemm_tflops);
      }

      if (crossover) {
        json cx = json::array();
        const int shapes[][2] = {
            {1536, 1152}, {1152, 1024}, {13824, 1152}, {1152, 6912}, {262144, 1152}};
        std::printf(
            "\nGEMV vs cuBLASLt (us per call, weights rotated past L2):\n%8s %8s %4s %9s %9s\n",
            "N", "K", "M", "gemv", "cublasLt");
        for (auto& s : shapes)
          for (int M : {1, 2, 4, 8, 16}) {
            const double g =
                M <= 8 ? cuda::time_linear_us(M, s[0], s[1], cuda::LinearPath::gemv, 20) : -1;
            const double l = cuda::time_linear_us(M, s[0], s[1], cuda::LinearPath::cublaslt, 20);
            std::printf("%8d %8d %4d %9.1f %9.1f\n", s[0], s[1], M, g, l);
            cx.push_back({{"N", s[0]}, {"K", s[1]}, {"M", M}, {"gemv_us", g}, {"cublaslt_us", l}});
          }
        res["crossover"] = cx;
      }

      if (decode_ops) std::printf("\n%s", cuda::decode_ops_report(std::max(reps, 5)).c_str());
      if (lm_ops) std::printf("\n%s", cuda::lm_head_report(std::max(reps, 10)).c_str());
      if (quant_ops)
        std::printf("\n%s",
                    cuda::quant_ops_report(std::max(reps, 10), quantize_bits ? quantize_bits : 4,
                                           quantize_group)
                        .c_str());
    };
    if (ceilings_first) diagnostics();

    MemoryTracker& mt = memory_tracker(Device::cuda);
    const double tl = now_s();
    ModelDir dir(model_dir);
    LoadOptions lo;
    lo.quantize_bits = quantize_bits;
    lo.quantize_group_size = quantize_group;
    auto model = load_model(dir, *be, lo);
    be->synchronize();
    const ModelInfo& in = model->info();
    std::printf("\nloaded %s: %.3f B parameters, %.2f GiB of weights in %.1f s\n",
                model_dir.c_str(), in.parameter_count / 1e9, in.weight_bytes / double(1u << 30),
                now_s() - tl);
    if (sample_ops) sampler_report(*be, in.vocab_size, std::max(reps, 50));
    Bench B{*model, *be};
    B.pipelined = !serial;
    if (sample_default) {
      B.sampling.temperature = 0.8f;
      B.sampling.top_p = 0.95f;
      B.sampling.min_p = 0.05f;
      B.sampling.top_k = 40;
      std::printf(
          "decode workloads sample at the CLI's default: temperature 0.8, top-k 40, "
          "top-p 0.95, min-p 0.05\n");
    }
    if (profile == "decode_b1") B.profile_step = 100;
    std::set<std::string> want;
    for (size_t i = 0, j; i <= only.size(); i = j + 1) {
      j = only.find(',', i);
      if (j == std::string::npos) j = only.size();
      if (j > i) want.insert(only.substr(i, j - i));
    }
    auto on = [&](const char* w) { return want.empty() || want.count(w); };

    // Work per token, for achieved rates: linear weights (read once per forward) and FLOPs.
    const double H = in.hidden_size, I = in.intermediate_size, hd = in.head_dim;
    const double nh = in.num_heads, nkv = in.num_kv_heads, V = in.vocab_size, L = in.num_layers;
    const double layer_params = H * (nh + 2 * nkv) * hd + nh * hd * H + 3 * I * H;
    const double wbytes = (L * layer_params + V * H) * dtype_size(in.weight_dtype);
    auto attn_flops = [&](int n_tok) {  // causal prefill of n_tok from position 0, all layers
      double f = 0;
      for (int l = 0; l < in.num_layers; ++l) {
        const bool sliding = in.layer_types[l] == "sliding_attention";
        double keys = 0;
        for (int t = 0; t < n_tok; ++t)
          keys += sliding ? std::min(t + 1, in.sliding_window) : t + 1;
        f += 4 * nh * hd * keys;
      }
      return f;
    };
    auto prefill_flops = [&](int seqs, int n_tok) {
      return seqs * (2.0 * n_tok * L * layer_params + attn_flops(n_tok) + 2.0 * V * H);
    };
    json t;
    json achieved;

    if (on("decode_b1")) {
      KvPool pool(*be, model->kv_spec(), B.pool_opts(1, 32 + 256, 32));
      mt.reset_peak();
      std::vector<double> ts;
      for (int r = 0; r <= reps; ++r) {
        auto p = B.tokens(32);
        const double s = B.generate(pool, {p}, 256);
        if (r > 0) ts.push_back(s);
      }
      const double tps = 256 / median(ts);
      t["decode_b1"] = tps;
      achieved["decode_b1_host_us_per_step"] = 1e6 * B.host_outside_sample / 255;
      const double base = static_cast<double>(in.weight_bytes + B.kv_in_use);
      json mem = {{"peak_bytes", mt.peak()},
                  {"weights_bytes", in.weight_bytes},
                  {"kv_in_use_bytes", B.kv_in_use},
                  {"kv_pool_bytes", pool.bytes()},
                  {"ratio", mt.peak() / base}};
      t["peak_memory_decode_b1"] = mem;
      achieved["decode_b1_gbps"] = wbytes * tps / 1e9;
      std::printf(
          "decode_b1        %10.0f tok/s  (%.0f GB/s of weights; host %.1f us per step outside "
          "the sampler's wait)\n",
          tps, wbytes * tps / 1e9, 1e6 * B.host_outside_sample / 255);
      std::printf(
          "peak GPU memory  %10.1f MiB on decode_b1 = %.3f x (weights %.1f MiB + KV in use "
          "%.2f MiB); KV pool %.2f MiB\n",
          mt.peak() / 1048576.0, mt.peak() / base, in.weight_bytes / 1048576.0,
          B.kv_in_use / 1048576.0, pool.bytes() / 1048576.0);
    }
    // Generated tok/s of S sequences (32-token prompts) decoding 128 tokens each, median of reps.
    auto decode_batch = [&](int S) {
      KvPool pool(*be, model->kv_spec(), B.pool_opts(S, 32 + 128, 32));
      std::vector<double> ts;
      for (int r = 0; r <= reps; ++r) {
        std::vector<std::vector<int32_t>> ps;
        for (int s = 0; s < S; ++s) ps.push_back(B.tokens(32));
        const double s = B.generate(pool, ps, 128);
        if (r > 0) ts.push_back(s);
      }
      return S * 128.0 / median(ts);
    };
    if (on("decode_b8")) {  // a few concurrent users: the GEMVs at M = 8 (not a peer workload)
      const double tps = decode_batch(8);
      t["decode_b8"] = tps;
      std::printf("decode_b8        %10.0f tok/s  (%.1f us per step)\n", tps, 8e6 / tps);
    }
    if (on("decode_b128")) {
      const double tps = decode_batch(128);
      t["decode_b128"] = tps;
      const double step_s = 128.0 / tps;
      achieved["decode_b128_tflops"] = 2.0 * 128 * (L * layer_params + V * H) / step_s / 1e12;
      std::printf(
          "decode_b128      %10.0f tok/s  (%.2f ms per step, %.0f TFLOP/s in the linears)\n", tps,
          step_s * 1e3, achieved["decode_b128_tflops"].get<double>());
    }
    if (on("prefill_4096")) {
      B.profile_forward = profile == "prefill_4096";
      KvPool pool(*be, model->kv_spec(), B.pool_opts(1, 4096, 4096));
      std::vector<double> ts;
      for (int r = 0; r <= reps; ++r) {
        const double s = B.forward_once(pool, {B.tokens(4096)}, false);
        if (r > 0) ts.push_back(s);
      }
      const double sec = median(ts);
      t["prefill_4096"] = 4096 / sec;
      achieved["prefill_4096_tflops"] = prefill_flops(1, 4096) / sec / 1e12;
      std::printf("prefill_4096     %10.0f tok/s  (%.2f ms, %.0f TFLOP/s)\n", 4096 / sec, sec * 1e3,
                  achieved["prefill_4096_tflops"].get<double>());
    }
    if (on("ttft_512")) {
      B.profile_forward = profile == "ttft_512";
      KvPool pool(*be, model->kv_spec(), B.pool_opts(1, 512, 512));
      std::vector<double> ts;
      for (int r = 0; r <= 2 * reps; ++r) {
        const double s = B.forward_once(pool, {B.tokens(512)}, true);
        if (r > 0) ts.push_back(s);
      }
      const double sec = median(ts);
      t["ttft_512"] = sec * 1e3;
      std::printf("ttft_512         %10.2f ms     (forward + greedy pick)\n", sec * 1e3);
    }
    if (on("classify_256x64")) {
      B.profile_forward = profile == "classify_256x64";
      KvPool pool(*be, model->kv_spec(), B.pool_opts(256, 64, 64));
      std::vector<double> ts;
      for (int r = 0; r <= reps; ++r) {
        std::vector<std::vector<int32_t>> ps;
        for (int s = 0; s < 256; ++s) ps.push_back(B.tokens(64));
        const double s = B.forward_once(pool, ps, false);
        if (r > 0) ts.push_back(s);
      }
      const double sec = median(ts);
      t["classify_256x64"] = 256 * 64 / sec;
      achieved["classify_256x64_tflops"] = prefill_flops(256, 64) / sec / 1e12;
      std::printf("classify_256x64  %10.0f tok/s  (%.2f ms, %.0f TFLOP/s)\n", 256 * 64 / sec,
                  sec * 1e3, achieved["classify_256x64_tflops"].get<double>());
    }
    if (!ceilings_first) diagnostics();
    if (achieved.contains("decode_b1_gbps"))
      std::printf("decode_b1 read its weights at %.0f%% of the copy ceiling\n",
                  100 * achieved["decode_b1_gbps"].get<double>() / copy_gbps);
    res["tessera"] = t;
    res["achieved"] = achieved;
    std::printf("%s\n", res.dump().c_str());
    if (!json_out.empty()) std::ofstream(json_out) << res.dump(2) << "\n";
    return 0;
  } catch (const tessera::Error& e) {
    std::fprintf(stderr, "tessera_gpu_bench: error: %s\n", e.what());
    return 1;
  }
}
