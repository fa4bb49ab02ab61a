// tessera chat-template --model DIR --messages FILE.json [--no-generation-prompt]
// Prints the rendered prompt exactly (no trailing newline), as transformers'
// apply_chat_template(messages, tokenize=False, add_generation_prompt=...) would.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"

namespace tessera::cli {

void add_chat_template_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("chat-template", "render a conversation with the model's chat template");
  struct Args {
    std::string model, messages;
    bool no_generation_prompt = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--model", a->model,
                  "model or tokenizer directory (tokenizer_config.json), or a .gguf file")
      ->required();
  cmd->add_option("--messages", a->messages, "JSON array of {\"role\", \"content\"} objects")
      ->required();
  cmd->add_flag("--no-generation-prompt", a->no_generation_prompt,
                "do not append the assistant turn header");
  cmd->callback([a] {
    run_command([&] {
      const std::string source = dev::chat_template_source(a->model);
      std::ifstream f(a->messages, std::ios::binary);
      if (!f) fail(ErrorKind::io, "cannot read " + a->messages);
      std::ostringstream ss;
      ss << f.rdbuf();
      const auto messages = parse_json<nlohmann::ordered_json>(ss.str(), a->messages);
      if (!messages.is_array()) fail_arg(a->messages + ": expected a JSON array of messages");
      for (size_t i = 0; i < messages.size(); ++i)
        if (!messages[i].is_object())
          fail_arg(a->messages + ": message " + std::to_string(i) + " is not a JSON object");
      std::string out =
          dev::render_chat_template(source, a->model, messages, !a->no_generation_prompt);
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fflush(stdout);
      return 0;
    });
  });
}

}  // namespace tessera::cli
