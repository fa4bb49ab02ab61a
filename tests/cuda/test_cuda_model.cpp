// Whole-model checks on the CUDA backend with the gemma3-tiny preset (real Gemma 3 vocabulary,
// sliding window 64): logits against the CPU backend, a sequence alone against the same sequence
// inside a ragged batch of others (batch = single), decode replayed from CUDA graphs against
// eager decode, a memory limit that fails the load cleanly, and the engine's warm-up at load
// leaving no trace in results or counters.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "cuda_test_util.h"
#include "engine/direct_runner.h"
#include "models/model.h"
#include "models/presets.h"
#include "process_temp.h"
#include "tessera/engine.h"
#include "tessera/error.h"
#ifdef TESSERA_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace tessera::cudatest {
namespace {

namespace fs = std::filesystem;

const std::string& tiny_dir() {
  static const std::string dir = [] {
    std::string d = testing::process_temp_dir("tessera_cuda_tiny");
    MakeModelOptions o;
    o.preset = "gemma3-tiny";
    o.out_dir = d;
    o.dtype = DType::bf16;
    o.seed = 7;
    make_model(o);
    return d;
  }();
  return dir;
}

struct Loaded {
  std::unique_ptr<ModelDir> dir;
  std::unique_ptr<Model> model;
};
Loaded load_on(ComputeBackend& be) {
  Loaded l;
  l.dir = std::make_unique<ModelDir>(tiny_dir());
  l.model = load_model(*l.dir, be, LoadOptions{});
  return l;
}

std::vector<int32_t> random_tokens(int n) {
  std::vector<int32_t> t(n);
  for (auto& x : t) x = 3 + static_cast<int32_t>(rng()() % 262000);
  return t;
}

// An engine on the GPU over gemma3-tiny: `context` positions per sequence (also the step's token
// budget), `seqs` sequences.
EngineOptions tiny_engine_options(int context, int seqs, bool warmup) {
  EngineOptions o;
  o.model_dir = tiny_dir();
  o.device = "cuda";
  o.context_length = context;
  o.max_seqs = seqs;
  o.max_batch_tokens = context;
  o.warmup = warmup;
  return o;
}

int argmax(const std::vector<float>& v) {
  return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());
}

TEST(CudaModel, TinyLogitsMatchCpu) {
  TS_REQUIRE_CUDA();
  Loaded g = load_on(*cuda()), c = load_on(cpu());
  const auto prompt = random_tokens(100);  // crosses the 64-token window
  DirectRunner rg(*g.model, 128), rc(*c.model, 128);
  std::vector<std::vector<int32_t>> seqs{prompt};
  auto lg = rg.step(seqs, true)[0];
  auto lc = rc.step(seqs, true)[0];
  ASSERT_EQ(lg.size(), lc.size());
  std::vector<float> fg, fc;
  int agree = 0;
  for (size_t r = 0; r < lg.size(); ++r) {
    fg.insert(fg.end(), lg[r].begin(), lg[r].end());
    fc.insert(fc.end(), lc[r].begin(), lc[r].end());
    agree += argmax(lg[r]) == argmax(lc[r]);
  }
  const double err = rel_err(fg, fc);
  std::printf(
      "tiny model, 100 positions: CUDA (bf16 activations) vs CPU (f32): rel err %.3e, "
      "argmax agreement %d/%zu\n",
      err, agree, lg.size());
  EXPECT_LT(err, 3e-2);
  EXPECT_GE(agree, static_cast<int>(lg.size()) * 9 / 10);
  // Decode steps continue from the cache on both.
  for (int s = 0; s < 5; ++s) {
    std::vector<std::vector<int32_t>> next{{argmax(lc.back())}};
    lg = rg.step(next, false)[0];
    lc = rc.step(next, false)[0];
    EXPECT_LT(rel_err(lg[0], lc[0]), 3e-2) << "decode step " << s;
  }
}

// Runs sequence A (prompt, then forced tokens) alone and inside a batch with B and C, which
// start at other lengths and stop early, and returns A's logits per step from each run.
void batch_equals_single(bool graphs) {
#ifdef TESSERA_HAVE_CUDA
  cuda::tuning(*cuda())->graphs = graphs;
#endif
  Loaded g = load_on(*cuda());
  const auto a = random_tokens(50), b = random_tokens(80), c = random_tokens(10);
  const auto forced = random_tokens(24);
  DirectRunner solo(*g.model, 128, 1), many(*g.model, 128, 3);
  std::vector<std::vector<float>> ls, lm;
  {
    std::vector<std::vector<int32_t>> s{a};
    ls.push_back(solo.step(s, false)[0][0]);
    std::vector<std::vector<int32_t>> m{a, b, c};
    lm.push_back(many.step(m, false)[0][0]);
  }
  for (size_t i = 0; i < forced.size(); ++i) {
    std::vector<std::vector<int32_t>> s{{forced[i]}};
    ls.push_back(solo.step(s, false)[0][0]);
    std::vector<std::vector<int32_t>> m{
        {forced[i]},
        {forced[(i + 3) % forced.size()]},
        i < 10 ? std::vector<int32_t>{forced[i]} : std::vector<int32_t>{}};
    if (i == 5) m[1] = random_tokens(7);  // B takes a prefill chunk mid-way: a mixed batch
    lm.push_back(many.step(m, false)[0][0]);
  }
  for (size_t i = 0; i < ls.size(); ++i) {
    EXPECT_LT(rel_err(lm[i], ls[i]), 1e-2) << "step " << i << (graphs ? " (graphs)" : " (eager)");
    // The batch runs other GEMM shapes (bf16 rounding differs slightly), so the argmax must agree
    // only where the top two logits are further apart than twice the largest difference.
    float dmax = 0.f, top = -INFINITY, second = -INFINITY;
    for (size_t j = 0; j < ls[i].size(); ++j) {
      dmax = std::max(dmax, std::fabs(lm[i][j] - ls[i][j]));
      if (ls[i][j] > top) {
        second = top;
        top = ls[i][j];
      } else if (ls[i][j] > second) {
        second = ls[i][j];
      }
    }
    if (top - second > 2 * dmax) {
      EXPECT_EQ(argmax(lm[i]), argmax(ls[i])) << "step " << i;
    }
  }
#ifdef TESSERA_HAVE_CUDA
  cuda::tuning(*cuda())->graphs = true;
#endif
}

TEST(CudaModel, BatchEqualsSingleEager) {
  TS_REQUIRE_CUDA();
  batch_equals_single(false);
}

TEST(CudaModel, BatchEqualsSingleWithGraphs) {
  TS_REQUIRE_CUDA();
  batch_equals_single(true);
}

#ifdef TESSERA_HAVE_CUDA
// Graph replays run the same kernels at the same shapes as the eager warm-up: identical logits.
TEST(CudaModel, GraphReplayEqualsEagerDecode) {
  TS_REQUIRE_CUDA();
  Loaded g = load_on(*cuda());
  const auto prompt = random_tokens(30);
  const auto forced = random_tokens(12);
  std::vector<std::vector<std::vector<float>>> runs;
  for (bool graphs : {false, true}) {
    cuda::tuning(*cuda())->graphs = graphs;
    DirectRunner r(*g.model, 64, 3);
    std::vector<std::vector<float>> out;
    std::vector<std::vector<int32_t>> p{prompt, prompt, forced};
    r.step(p, false);
    for (int32_t t : forced) {  // three sequences: padded to a bucket of four with graphs
      std::vector<std::vector<int32_t>> s{{t}, {t}, {t}};
      auto l = r.step(s, false);
      out.push_back(l[0][0]);
      out.push_back(l[2][0]);
    }
    runs.push_back(out);
  }
  cuda::tuning(*cuda())->graphs = true;
  ASSERT_EQ(runs[0].size(), runs[1].size());
  for (size_t i = 0; i < runs[0].size(); ++i) EXPECT_EQ(rel_err(runs[1][i], runs[0][i]), 0.0) << i;
}

#endif

TEST(CudaModel, LoadOverMemoryLimitFailsCleanly) {
  TS_REQUIRE_CUDA();
  MemoryTracker& t = memory_tracker(Device::cuda);
  const size_t before = t.active();
  t.set_limit(before + (8u << 20));  // the tiny model's embedding alone is 64 MiB
  try {
    Loaded g = load_on(*cuda());
    t.set_limit(0);
    FAIL() << "the load fit in 8 MiB";
  } catch (const Error& e) {
    t.set_limit(0);
    EXPECT_EQ(e.kind(), ErrorKind::out_of_memory) << e.what();
  }
  EXPECT_EQ(t.active(), before);
}

// CUDA computes in bf16: f32 weights are refused by name, "auto" holds even an f32 checkpoint in
// bf16, and the model says what it computes in (issue 33, item 4).
TEST(CudaModel, F32IsRefusedAndAutoHoldsBf16) {
  TS_REQUIRE_CUDA();
  const std::string d = testing::process_temp_dir("tessera_cuda_f32");
  MakeModelOptions mo;
  mo.preset = "gemma3-tiny";
  mo.out_dir = d;
  mo.dtype = DType::f32;
  mo.seed = 7;
  make_model(mo);
  ModelDir dir(d);
  LoadOptions f32;
  f32.dtype = "f32";
  try {
    load_model(dir, *cuda(), f32);
    FAIL() << "--dtype f32 loaded on CUDA";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("computes in bf16"), std::string::npos) << e.what();
  }
  const auto m = load_model(dir, *cuda(), LoadOptions{});
  EXPECT_EQ(m->info().checkpoint_dtype, DType::f32);
  EXPECT_EQ(m->info().weight_dtype, DType::bf16);
  EXPECT_EQ(m->info().compute_dtype, DType::bf16);
}

// The warm-up request an engine runs at load on a GPU: afterwards the counters are zero, no KV
// block is held, and a request's tokens and metrics are those of an engine loaded without it.
TEST(CudaModel, EngineWarmupLeavesNoTrace) {
  TS_REQUIRE_CUDA();
  auto run = [](bool warmup, EngineStats& after_load) {
    EngineOptions o = tiny_engine_options(256, 4, warmup);
    o.kv_memory = 64u << 20;
    auto e = Engine::load(o);
    after_load = e->stats();
    GenerateOptions g;
    g.max_tokens = 12;
    g.ignore_eos = true;
    g.sampling.temperature = 0.f;
    std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};
    return e->generate(Prompt{prompt}, g);
  };
  EngineStats warm{}, cold{};
  const GenerateResult a = run(true, warm), b = run(false, cold);
  EXPECT_EQ(warm.steps, 0);
  EXPECT_EQ(warm.prompt_tokens, 0);
  EXPECT_EQ(warm.generated_tokens, 0);
  EXPECT_EQ(warm.kv_blocks_used, 0);
  EXPECT_EQ(cold.steps, 0);
  ASSERT_TRUE(a.error.empty()) << a.error;
  ASSERT_TRUE(b.error.empty()) << b.error;
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.ids.size(), 12u);
  EXPECT_EQ(a.metrics.prompt_tokens, 18);
  EXPECT_EQ(a.metrics.cached_prompt_tokens, 0);
}

// The engine's pipelined decode on the GPU (each step's tokens taken from the previous sample on
// the device by the batch install kernel, ids copied back on a side stream) against the same two
// sequences stepped by a DirectRunner with greedy picks on the host: the same batch shapes at
// every step, so the same logits and the same ids. A mixed-up row, a token read before the
// sample wrote it or a batch installed before its copy landed would change the continuation.
TEST(CudaModel, EnginePipelinedDecodeMatchesStepwise) {
  TS_REQUIRE_CUDA();
  const auto a = random_tokens(37), b = random_tokens(20);
  constexpr int kNew = 16;
  std::vector<std::vector<int32_t>> want(2);
  {
    Loaded g = load_on(*cuda());
    DirectRunner r(*g.model, 128, 2);
    std::vector<std::vector<int32_t>> in{a, b};
    for (int i = 0; i < kNew; ++i) {
      const auto logits = r.step(in, false);
      for (int s = 0; s < 2; ++s) {
        want[s].push_back(argmax(logits[s][0]));
        in[s] = {want[s].back()};
      }
    }
  }
  auto e = Engine::load(tiny_engine_options(128, 2, false));
  GenerateOptions g;
  g.max_tokens = kNew;
  g.ignore_eos = true;
  g.sampling.temperature = 0.f;
  for (int run = 0; run < 2; ++run) {  // the second run replays the captured decode graph
    const auto res = e->batch_generate({Prompt{a}, Prompt{b}}, g);
    ASSERT_EQ(res.size(), 2u);
    for (int s = 0; s < 2; ++s) {
      ASSERT_TRUE(res[s].error.empty()) << res[s].error;
      EXPECT_EQ(res[s].ids, want[s]) << "sequence " << s << ", run " << run;
    }
  }
}

// The LM head's fused greedy pick (one sequence) generates the same ids as the host's argmax of
// the logits, eager and replayed (the greedy kernel's, at two sequences: the test above).
TEST(CudaModel, EngineFusedGreedyPickMatchesArgmax) {
  TS_REQUIRE_CUDA();
  const auto a = random_tokens(41);
  constexpr int kNew = 12;
  std::vector<int32_t> want;
  {
    Loaded g = load_on(*cuda());
    DirectRunner r(*g.model, 128, 1);
    std::vector<std::vector<int32_t>> in{a};
    for (int i = 0; i < kNew; ++i) {
      want.push_back(argmax(r.step(in, false)[0][0]));
      in[0] = {want.back()};
    }
  }
  auto e = Engine::load(tiny_engine_options(128, 1, false));
  GenerateOptions g;
  g.max_tokens = kNew;
  g.ignore_eos = true;
  g.sampling.temperature = 0.f;
  for (int run = 0; run < 2; ++run) {
    const auto res = e->batch_generate({Prompt{a}}, g);
    ASSERT_EQ(res.size(), 1u);
    ASSERT_TRUE(res[0].error.empty()) << res[0].error;
    EXPECT_EQ(res[0].ids, want) << "run " << run;
  }
}

}  // namespace
}  // namespace tessera::cudatest
