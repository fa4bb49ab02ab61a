// Continuous batching on the CPU (issue #5): classify prompts/s and batch decode tokens/s through
// the scheduler against the same prompts run one at a time, and the prefix cache's gain on a
// classification workload with a long shared header.
//
//   tessera_batching_bench --model DIR [--prompts N] [--prompt-len L] [--new G] [--header H]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tessera/engine.h"

using namespace tessera;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::vector<Prompt> random_prompts(int n, int len, int vocab, uint32_t seed,
                                   const std::vector<int32_t>& header = {}) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(3, vocab - 1);
  std::vector<Prompt> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> ids = header;
    if (ids.empty()) ids.push_back(2);
    for (int j = 0; j < len; ++j) ids.push_back(d(rng));
    out.emplace_back(std::move(ids));
  }
  return out;
}

std::unique_ptr<Engine> load(const std::string& dir, bool prefix_cache, int batch_tokens) {
  EngineOptions o;
  o.model_dir = dir;
  o.device = "cpu";
  o.context_length = 2048;
  o.prefix_cache = prefix_cache;
  o.max_batch_tokens = batch_tokens;
  o.max_seqs = 64;
  return Engine::load(o);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model;
  int prompts = 32, prompt_len = 64, new_tokens = 32, header = 512, batch_tokens = 512;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--model")
      model = v;
    else if (k == "--prompts")
      prompts = std::atoi(v.c_str());
    else if (k == "--prompt-len")
      prompt_len = std::atoi(v.c_str());
    else if (k == "--new")
      new_tokens = std::atoi(v.c_str());
    else if (k == "--header")
      header = std::atoi(v.c_str());
    else if (k == "--batch-tokens")
      batch_tokens = std::atoi(v.c_str());
  }
  if (model.empty()) {
    std::fprintf(stderr,
                 "usage: %s --model DIR [--prompts N] [--prompt-len L] [--new G] [--header H]\n",
                 argv[0]);
    return 2;
  }
  try {
    auto e = load(model, false, batch_tokens);
    const int vocab = e->info().vocab_size;
    std::printf("model %s (%s, %lld parameters), device %s, %d prompts of %d tokens\n",
                model.c_str(), e->info().architecture.c_str(),
                static_cast<long long>(e->info().parameter_count), e->device_name().c_str(),
                prompts, prompt_len);
    ClassifyOptions co;
    auto ps = random_prompts(prompts, prompt_len, vocab, 1);
    e->classify({ps[0]}, co);  // warm-up

    auto t = Clock::now();
    BatchMetrics bm;
    e->classify(ps, co, &bm);
    const double batched = seconds_since(t);
    t = Clock::now();
    for (const auto& p : ps) e->classify({p}, co);
    const double serial = seconds_since(t);
    std::printf(
        "classify          batched %8.1f prompts/s %9.1f tok/s | one at a time %8.1f prompts/s | "
        "x%.2f\n",
        prompts / batched, prompts * (prompt_len + 1) / batched, prompts / serial,
        serial / batched);

    GenerateOptions g;
    g.sampling.temperature = 0;
    g.max_tokens = new_tokens;
    g.ignore_eos = true;
    auto gp = random_prompts(prompts, 16, vocab, 2);
    t = Clock::now();
    e->batch_generate(gp, g, {}, &bm);
    const double gb = seconds_since(t);
    t = Clock::now();
    for (const auto& p : gp) e->generate(p, g);
    const double gs = seconds_since(t);
    const int gen = prompts * new_tokens;
    std::printf(
        "batch_generate    batched %8.1f gen tok/s                | one at a time %8.1f gen tok/s  "
        "| x%.2f\n",
        gen / gb, gen / gs, gs / gb);

    // Prefix sharing: a long shared header + a short unique tail per prompt.
    std::vector<int32_t> head{2};
    {
      std::mt19937 rng(3);
      std::uniform_int_distribution<int32_t> d(3, vocab - 1);
      for (int i = 0; i < header; ++i) head.push_back(d(rng));
    }
    auto hp = random_prompts(prompts, 16, vocab, 4, head);
    e.reset();
    for (bool cache : {false, true}) {
      auto ec = load(model, cache, batch_tokens);
      ec->classify({hp[0]}, co);  // warm-up (and, with the cache, fills the header's blocks)
      t = Clock::now();
      ec->classify(hp, co, &bm);
      const double s = seconds_since(t);
      const auto st = ec->stats();
      std::printf(
          "classify header %d + 16, prefix cache %-3s %8.1f prompts/s (%lld prompt tokens served "
          "from cache)\n",
          header, cache ? "on" : "off", prompts / s,
          static_cast<long long>(st.cached_prompt_tokens));
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "error: %s\n", ex.what());
    return 1;
  }
  return 0;
}
