// tessera make-model --preset NAME --out DIR [--dtype bf16|f32] [--seed N] [--tokenizer DIR]
#include <cstdio>

#include "cli.h"

namespace tessera::cli {

void add_make_model_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("make-model", "write a random-weight model of a preset shape");
  auto opts = std::make_shared<MakeModelOptions>();
  auto dtype = std::make_shared<std::string>("bf16");
  cmd->add_option("--preset", opts->preset,
                  "gemma3-tiny | gemma3-1b | llama3-tiny | qwen2.5-tiny | qwen3-tiny")
      ->required();
  cmd->add_option("--out", opts->out_dir, "output directory")->required();
  cmd->add_option("--dtype", *dtype, "bf16 | f32");
  cmd->add_option("--seed", opts->seed, "random seed");
  cmd->add_option("--tokenizer", opts->tokenizer_dir,
                  "copy tokenizer.json and tokenizer_config.json from this directory");
  cmd->callback([opts, dtype] {
    run_command([&] {
      if (*dtype == "bf16") {
        opts->dtype = DType::bf16;
      } else if (*dtype == "f32") {
        opts->dtype = DType::f32;
      } else {
        fail_arg("--dtype: expected bf16 or f32, got '" + *dtype + "'");
      }
      int64_t n = make_model(*opts);
      std::fprintf(stderr, "wrote %s: preset %s, %lld parameters, %s\n", opts->out_dir.c_str(),
                   opts->preset.c_str(), static_cast<long long>(n), dtype->c_str());
      return 0;
    });
  });
}

}  // namespace tessera::cli
