// tessera: the command-line tool. Each subcommand lives in cmd_<name>.cpp.
#include <cstdio>

#include "cli.h"

int main(int argc, char** argv) {
  CLI::App app{"tessera: run Hugging Face language models on NVIDIA GPUs and x86 CPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessera 0.1.0");
  tessera::cli::add_tokenize_commands(app);
  tessera::cli::add_info_command(app);
  tessera::cli::add_logits_command(app);
  tessera::cli::add_perplexity_command(app);
  tessera::cli::add_make_model_command(app);
  tessera::cli::add_quantize_command(app);
  tessera::cli::add_chat_template_command(app);
  tessera::cli::add_generate_command(app);
  tessera::cli::add_chat_command(app);
  tessera::cli::add_classify_command(app);
  tessera::cli::add_embed_command(app);
  tessera::cli::add_batch_command(app);
  tessera::cli::add_serve_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // Subcommands set this through their callbacks.
  return tessera::cli::exit_code();
}
