// tessera: the command-line tool. Each subcommand lives in cmd_<name>.cpp.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "cli.h"

namespace {

// A reader that goes away (`tessera generate ... | head -c 1`) ends the output, as it ends
// `yes | head`: the process exits quietly with status 0 instead of dying of SIGPIPE (issue #29).
// `serve` sets SIGPIPE to SIG_IGN instead: a client leaving is a failed write there.
void end_of_output(int) {
  _exit(0);
}

// CLI11 reports an unknown first word as a missing subcommand ("A subcommand is required");
// this names it and lists the commands that exist.
bool refuse_unknown_command(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name() == argv[1]) return false;
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  std::fprintf(stderr, "tessera: error: unknown command '%s' (the commands: %s; see --help)\n",
               argv[1], names.c_str());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, end_of_output);
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
  if (refuse_unknown_command(app, argc, argv)) return 1;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // Subcommands set this through their callbacks.
  return tessera::cli::exit_code();
}
