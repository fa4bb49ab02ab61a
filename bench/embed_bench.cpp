// Embedding throughput through the public API (Engine::embed), in one process: a warm-up call,
// then --repeat timed calls over the same prompts, so that the figure is the steady state that a
// server sees (loading, kernel loading and first-call costs excluded), as the sentence-transformers
// side of scripts/bench/embed_vs_st.py is timed after its own warm-up.
//
//   tessera_embed_bench --model DIR --input IDS.jsonl [--device cuda] [--dtype bf16]
//                       [--context N] [--repeat 5] [--out EMB.jsonl]
// IDS.jsonl: one {"tokens": [...]} per line. Prints the best and median milliseconds per call
// and tokens/s; --out writes the last call's embeddings, one {"embedding": [...]} per line.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/engine.h"

int main(int argc, char** argv) {
  CLI::App app("embedding throughput through Engine::embed");
  tessera::EngineOptions eo;
  std::string input, out;
  int repeat = 5;
  app.add_option("--model", eo.model_dir, "model directory")->required();
  app.add_option("--input", input, "JSONL of {\"tokens\": [...]}")->required();
  app.add_option("--device", eo.device, "auto | cpu | cuda");
  app.add_option("--dtype", eo.dtype, "auto | f32 | bf16");
  app.add_option("--context", eo.context_length, "positions per sequence");
  app.add_option("--repeat", repeat, "timed calls after the warm-up")->check(CLI::Range(1, 1000));
  app.add_option("--out", out, "write the last call's embeddings (JSONL)");
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<tessera::Prompt> prompts;
    std::ifstream in(input);
    if (!in) throw std::runtime_error(input + ": cannot be read");
    int tokens = 0;
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      auto ids = nlohmann::json::parse(line).at("tokens").get<std::vector<int32_t>>();
      tokens += static_cast<int>(ids.size());
      prompts.emplace_back(std::move(ids));
    }
    auto engine = tessera::Engine::load(eo);
    tessera::EmbedOptions o;
    std::vector<tessera::EmbedResult> r = engine->embed(prompts, o);  // warm-up
    std::vector<double> ms;
    for (int i = 0; i < repeat; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      r = engine->embed(prompts, o);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    for (const auto& e : r)
      if (!e.error.empty()) throw std::runtime_error("embed: " + e.error);
    std::sort(ms.begin(), ms.end());
    std::printf("embed %zu prompts, %d tokens: best %.2f ms, median %.2f ms (%.0f tokens/s)\n",
                prompts.size(), tokens, ms.front(), ms[ms.size() / 2], tokens / ms.front() * 1e3);
    if (!out.empty()) {
      std::ofstream f(out);
      for (const auto& e : r) f << nlohmann::json({{"embedding", e.embedding}}).dump() << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_embed_bench: error: %s\n", e.what());
    return 1;
  }
}
