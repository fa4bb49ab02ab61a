// tessera classify --model DIR --input FILE.jsonl [--logits] [--top-logprobs N]
//   [--batch-tokens N] [sampler options]
// One forward per prompt (no decode), the next token at each prompt's last position. Output
// lines, in input order: {"token": id, "text": "...", "logits": [...], "top_logprobs": [...]}
// (the last two only when asked); aggregate metrics on stderr.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "cli_engine.h"
#include "cli_jsonl.h"

namespace tessera::cli {

void add_classify_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("classify", "next token (and logits) at the end of each prompt");
  struct Args {
    EngineArgs engine;
    SamplerArgs sampler;
    std::string input;
    bool logits = false;
    int top_logprobs = 0;
  };
  auto a = std::make_shared<Args>();
  a->sampler.temperature = 0.0f;  // classification picks the argmax unless told otherwise
  add_engine_options(cmd, a->engine);
  add_sampler_options(cmd, a->sampler);
  cmd->add_option("--input", a->input,
                  "JSONL file: {\"prompt\": ...} or {\"tokens\": [...]} per line")
      ->required();
  cmd->add_flag("--logits", a->logits, "print the full logits row of each prompt's last position");
  cmd->add_option("--top-logprobs", a->top_logprobs, "the N most likely next tokens with logprobs");
  cmd->callback([a] {
    run_command([&] {
      ClassifyOptions o;
      o.sampling = to_sampling(a->sampler);
      o.return_logits = a->logits;
      o.top_logprobs = a->top_logprobs;
      if (o.top_logprobs < 0 || o.top_logprobs > 20) fail_arg("--top-logprobs must be in [0, 20]");
      std::vector<Prompt> prompts = read_prompt_jsonl(a->input);
      auto engine = load_engine(a->engine);
      BatchMetrics m;
      auto results = engine->classify(prompts, o, &m);
      int failed = 0;
      for (const auto& r : results) {
        nlohmann::json j;
        if (!r.error.empty()) {
          j = {{"error", r.error}};
          ++failed;
        } else {
          j = {{"token", r.token}, {"text", r.text}};
          if (a->logits) j["logits"] = r.logits;
          if (a->top_logprobs > 0) {
            nlohmann::json tl = nlohmann::json::array();
            for (const auto& t : r.top_logprobs)
              tl.push_back({{"token", t.id}, {"text", t.text}, {"logprob", t.logprob}});
            j["top_logprobs"] = tl;
          }
        }
        std::printf("%s\n",
                    j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      }
      std::fprintf(stderr,
                   "classify: %d prompts (%d failed), %d prompt tokens in %.1f ms: %.1f prompts/s, "
                   "%.1f tokens/s, peak memory %s\n",
                   m.requests, failed, m.prompt_tokens, m.total_ms, m.requests_per_s,
                   m.prompt_tokens_per_s, dev::format_bytes(m.peak_memory_bytes).c_str());
      return failed ? 1 : 0;
    });
  });
}

}  // namespace tessera::cli
