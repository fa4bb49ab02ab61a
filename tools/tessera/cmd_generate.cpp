// tessera generate --model DIR (--prompt STR | --tokens 2,17,99) [generation options] [--json]
// Streams text to stdout and metrics to stderr; with --json prints one object at the end:
// {"ids": [...], "text": "...", "finish_reason": "...", "metrics": {...}} (ids: generated only).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "cli_engine.h"

namespace tessera::cli {

void add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "generate text from a prompt or token ids");
  struct Args {
    EngineArgs engine;
    GenerateArgs gen;
    std::string prompt, tokens;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  add_engine_options(cmd, a->engine);
  add_generate_options(cmd, a->gen);
  auto* p =
      cmd->add_option("--prompt", a->prompt, "prompt text (BOS is added as Hugging Face does)");
  auto* t = cmd->add_option("--tokens", a->tokens, "prompt token ids, comma-separated");
  p->excludes(t);
  cmd->add_flag("--json", a->json, "print one JSON object instead of streaming");
  cmd->callback([a, p, t] {
    run_command([&] {
      if (p->count() == 0 && t->count() == 0) fail_arg("give --prompt or --tokens");
      GenerateOptions g = to_generate(a->gen);
      Prompt prompt = t->count() ? Prompt(parse_id_list(a->tokens, "--tokens")) : Prompt(a->prompt);
      auto engine = load_engine(a->engine, /*one_sequence=*/true);
      TokenCallback stream;
      if (!a->json) {
        stream = [](int32_t, std::string_view piece) {
          std::fwrite(piece.data(), 1, piece.size(), stdout);
          std::fflush(stdout);
          return true;
        };
      }
      // The request checked and tokenized once: its errors are the command's, before any output.
      const PreparedRequest req = engine->prepare(prompt, g);
      GenerateResult r = engine->generate(req, stream);
      if (r.finish_reason == FinishReason::error) fail_arg(r.error);
      if (a->json) {
        nlohmann::json j = {{"ids", r.ids},
                            {"text", r.text},
                            {"finish_reason", finish_reason_name(r.finish_reason)},
                            {"metrics", metrics_json(r.metrics)}};
        std::printf("%s\n",
                    j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      } else {
        std::printf("\n");
      }
      print_metrics(r.metrics);
      return 0;
    });
  });
}

}  // namespace tessera::cli
