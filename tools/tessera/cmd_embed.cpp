// tessera embed --model DIR --input FILE.jsonl [--pooling auto|mean|cls|last] [--no-normalize]
//   [--dimensions N] [--prompt-name NAME] [engine options]
// One prefill per prompt through the scheduler (Engine::embed), the final hidden states pooled.
// Output lines, in input order: {"embedding": [...], "prompt_tokens": N} or {"error": "..."};
// aggregate metrics on stderr.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "cli_engine.h"
#include "cli_jsonl.h"

namespace tessera::cli {

void add_embed_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("embed", "pooled final hidden states of each prompt");
  struct Args {
    EngineArgs engine;
    std::string input, pooling = "auto", prompt_name;
    bool no_normalize = false;
    int dimensions = 0;
  };
  auto a = std::make_shared<Args>();
  add_engine_options(cmd, a->engine);
  cmd->add_option("--input", a->input,
                  "JSONL file: {\"prompt\": ...} or {\"tokens\": [...]} per line")
      ->required();
  cmd->add_option("--pooling", a->pooling, "auto (the last token), mean, cls or last")
      ->check(CLI::IsMember({"auto", "mean", "cls", "last"}));
  cmd->add_flag("--no-normalize", a->no_normalize, "leave the vectors unnormalised");
  cmd->add_option("--dimensions", a->dimensions, "keep the first N values (then normalise)");
  cmd->add_option("--prompt-name", a->prompt_name,
                  "a sentence-transformers prompt (config_sentence_transformers.json) before "
                  "each text prompt");
  cmd->callback([a] {
    run_command([&] {
      EmbedOptions o;
      o.pooling = a->pooling == "mean"   ? Pooling::mean
                  : a->pooling == "cls"  ? Pooling::cls
                  : a->pooling == "last" ? Pooling::last
                                         : Pooling::automatic;
      o.normalize = !a->no_normalize;
      o.dimensions = a->dimensions;
      o.prompt_name = a->prompt_name;
      if (o.dimensions < 0) fail_arg("--dimensions must be positive");
      std::vector<Prompt> prompts = read_prompt_jsonl(a->input);
      auto engine = load_engine(a->engine);
      BatchMetrics m;
      auto results = engine->embed(prompts, o, &m);
      int failed = 0;
      for (const auto& r : results) {
        nlohmann::json j;
        if (!r.error.empty()) {
          j = {{"error", r.error}};
          ++failed;
        } else {
          j = {{"embedding", r.embedding}, {"prompt_tokens", r.prompt_tokens}};
        }
        std::printf("%s\n", j.dump().c_str());
      }
      std::fprintf(stderr,
                   "embed: %d prompts (%d failed), %d prompt tokens in %.1f ms: %.1f prompts/s, "
                   "%.1f tokens/s, peak memory %s\n",
                   m.requests, failed, m.prompt_tokens, m.total_ms, m.requests_per_s,
                   m.prompt_tokens_per_s, dev::format_bytes(m.peak_memory_bytes).c_str());
      return failed ? 1 : 0;
    });
  });
}

}  // namespace tessera::cli
