// tessera logits --model DIR --tokens 2,17,99 [--all-positions] [--json]
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "cli_engine.h"

namespace tessera::cli {

void add_logits_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("logits", "run one forward over token ids and print logits");
  struct Args {
    std::string model, tokens, device = "cpu", dtype = "auto";
    int quantize = 0;
    bool all = false, json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--model", a->model, "Hugging Face model directory")->required();
  cmd->add_option("--tokens", a->tokens, "comma-separated token ids")->required();
  cmd->add_flag("--all-positions", a->all, "a row for every position, not only the last");
  cmd->add_flag("--json", a->json, "print {\"logits\": [[...], ...]}");
  cmd->add_option("--device", a->device, "auto | cpu | cuda");
  cmd->add_option("--dtype", a->dtype, "weight dtype in memory: auto | f32 | bf16");
  add_quantize_option(cmd, a->quantize);
  cmd->callback([a] {
    run_command([&] {
      std::vector<int32_t> ids = parse_id_list(a->tokens, "--tokens");
      auto rows = dev::logits(a->model, a->device, a->dtype, ids, a->all, a->quantize);
      if (a->json) {
        nlohmann::json j = {{"logits", rows}};
        std::printf("%s\n", j.dump().c_str());
      } else {
        for (size_t r = 0; r < rows.size(); ++r) {
          size_t best = 0;
          for (size_t i = 1; i < rows[r].size(); ++i)
            if (rows[r][i] > rows[r][best]) best = i;
          std::printf("position %zu: argmax %zu (%.6f)\n", a->all ? r : ids.size() - 1, best,
                      rows[r][best]);
        }
      }
      return 0;
    });
  });
}

}  // namespace tessera::cli
