// tessera batch --model DIR --input FILE.jsonl [generation options as for generate]
// Every prompt decoded together through the scheduler; output lines, in input order:
// {"ids": [...], "text": "...", "finish_reason": "..."}; aggregate metrics on stderr.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "cli_engine.h"
#include "cli_jsonl.h"

namespace tessera::cli {

void add_batch_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("batch", "generate for many prompts at once");
  struct Args {
    EngineArgs engine;
    GenerateArgs gen;
    std::string input;
  };
  auto a = std::make_shared<Args>();
  add_engine_options(cmd, a->engine);
  add_generate_options(cmd, a->gen);
  cmd->add_option("--input", a->input,
                  "JSONL file: {\"prompt\": ...} or {\"tokens\": [...]} per line")
      ->required();
  cmd->callback([a] {
    run_command([&] {
      GenerateOptions g = to_generate(a->gen);
      std::vector<Prompt> prompts = read_prompt_jsonl(a->input);
      auto engine = load_engine(a->engine);
      BatchMetrics m;
      auto results = engine->batch_generate(prompts, g, {}, &m);
      int failed = 0;
      for (const auto& r : results) {
        nlohmann::json j = {{"ids", r.ids},
                            {"text", r.text},
                            {"finish_reason", finish_reason_name(r.finish_reason)}};
        if (r.finish_reason == FinishReason::error) {
          j["error"] = r.error;
          ++failed;
        }
        std::printf("%s\n",
                    j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      }
      std::fprintf(stderr,
                   "batch: %d prompts (%d failed), %d prompt + %d generated tokens in %.1f ms: "
                   "%.1f generated tokens/s, peak memory %s\n",
                   m.requests, failed, m.prompt_tokens, m.generated_tokens, m.total_ms,
                   m.generated_tokens_per_s, dev::format_bytes(m.peak_memory_bytes).c_str());
      return failed ? 1 : 0;
    });
  });
}

}  // namespace tessera::cli
