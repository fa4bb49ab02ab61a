// tessera chat-template --model DIR --messages FILE.json [--no-generation-prompt]
// Prints the rendered prompt exactly (no trailing newline), as transformers'
// apply_chat_template(messages, tokenize=False, add_generation_prompt=...) would.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chat/chat_template.h"
#include "cli.h"
#include "core/check.h"

namespace tessera::cli {

void add_chat_template_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("chat-template", "render a conversation with the model's chat template");
  struct Args {
    std::string model, messages;
    bool no_generation_prompt = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--model", a->model, "model or tokenizer directory (tokenizer_config.json)")
      ->required();
  cmd->add_option("--messages", a->messages, "JSON array of {\"role\", \"content\"} objects")
      ->required();
  cmd->add_flag("--no-generation-prompt", a->no_generation_prompt,
                "do not append the assistant turn header");
  cmd->callback([a] {
    run_command([&] {
      std::string source = find_chat_template_source(a->model);
      if (source.empty())
        fail_model(a->model +
                   ": no chat template (tokenizer_config.json has no \"chat_template\" "
                   "and there is no chat_template.jinja)");
      std::ifstream f(a->messages, std::ios::binary);
      if (!f) fail(ErrorKind::io, "cannot read " + a->messages);
      std::ostringstream ss;
      ss << f.rdbuf();
      nlohmann::ordered_json messages;
      try {
        messages = nlohmann::ordered_json::parse(ss.str());
      } catch (const nlohmann::json::exception& e) {
        fail_arg(a->messages + ": not valid JSON: " + e.what());
      }
      if (!messages.is_array()) fail_arg(a->messages + ": expected a JSON array of messages");
      for (size_t i = 0; i < messages.size(); ++i)
        if (!messages[i].is_object())
          fail_arg(a->messages + ": message " + std::to_string(i) + " is not a JSON object");
      ChatTemplate tmpl(source);
      std::string out = apply_chat_template(tmpl, messages, !a->no_generation_prompt,
                                            chat_template_special_tokens(a->model));
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fflush(stdout);
      return 0;
    });
  });
}

}  // namespace tessera::cli
