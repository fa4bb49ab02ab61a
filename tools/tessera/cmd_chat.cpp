// tessera chat --model DIR [--messages FILE.json] [--tools FILE.json] [generation options]
// Interactive and multi-turn on stdin (/reset clears the conversation, /exit leaves), or one
// turn from a JSON array of {"role", "content"} messages (OpenAI's shapes: an assistant's
// "tool_calls", a "tool" turn's "tool_call_id"). --tools offers OpenAI tool definitions through
// the chat template (docs/GRAMMAR.md, "Tool calling"); the model's call is printed as it wrote
// it (the server parses it into tool_calls).
#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "cli_engine.h"

namespace tessera::cli {

namespace {

// An assistant's "tool_calls": [{"id", "function": {"name", "arguments": text or object}}].
std::vector<ToolCall> read_tool_calls(const nlohmann::json& j, const std::string& where) {
  if (!j.is_array()) fail_arg(where + ": \"tool_calls\" must be a list");
  std::vector<ToolCall> out;
  for (const auto& c : j) {
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object() ||
        !c["function"].contains("name") || !c["function"]["name"].is_string())
      fail_arg(where + ": a tool call needs \"function\": {\"name\", \"arguments\"}");
    const auto& f = c["function"];
    ToolCall t;
    t.id = c.value("id", "");
    t.name = f["name"].get<std::string>();
    const nlohmann::json args = f.value("arguments", nlohmann::json::object());
    t.arguments = args.is_string() ? args.get<std::string>() : args.dump();
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<ChatMessage> read_messages(const std::string& path) {
  nlohmann::json j = dev::read_json_file(path);
  if (!j.is_array()) fail_arg(path + ": expected a JSON array of {\"role\", \"content\"} objects");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& m = j[i];
    const std::string where = path + ": message " + std::to_string(i);
    const bool calls = m.is_object() && m.contains("tool_calls") && !m["tool_calls"].is_null();
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() ||
        !((m.contains("content") && m["content"].is_string()) ||
          (calls && (!m.contains("content") || m["content"].is_null()))))
      fail_arg(where + " needs string \"role\" and \"content\"");
    ChatMessage cm{m["role"].get<std::string>(), m.contains("content") && m["content"].is_string()
                                                     ? m["content"].get<std::string>()
                                                     : ""};
    if (calls) cm.tool_calls = read_tool_calls(m["tool_calls"], where);
    if (m.contains("tool_call_id") && m["tool_call_id"].is_string())
      cm.tool_call_id = m["tool_call_id"].get<std::string>();
    if (m.contains("name") && m["name"].is_string()) cm.name = m["name"].get<std::string>();
    out.push_back(std::move(cm));
  }
  if (out.empty()) fail_arg(path + ": no messages");
  return out;
}

bool print_piece(int32_t, std::string_view piece) {
  std::fwrite(piece.data(), 1, piece.size(), stdout);
  std::fflush(stdout);
  return true;
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("chat", "chat with a model through its chat template");
  struct Args {
    EngineArgs engine;
    GenerateArgs gen;
    std::string messages, system, tools;
  };
  auto a = std::make_shared<Args>();
  add_engine_options(cmd, a->engine);
  add_generate_options(cmd, a->gen);
  cmd->add_option("--messages", a->messages,
                  "JSON file with the conversation: answer its last turn and exit");
  cmd->add_option("--system", a->system, "system prompt for the interactive session");
  cmd->add_option("--tools", a->tools,
                  "JSON file with a list of OpenAI tool definitions offered through the chat "
                  "template");
  cmd->callback([a] {
    run_command([&] {
      GenerateOptions g = to_generate(a->gen);
      if (!a->tools.empty()) {
        // With the file's key order (the template prints the definitions as given).
        std::ifstream f(a->tools, std::ios::binary);
        if (!f) fail_arg(a->tools + ": cannot open");
        const auto t = nlohmann::ordered_json::parse(f, nullptr, /*allow_exceptions=*/false);
        if (t.is_discarded() || !t.is_array())
          fail_arg(a->tools + ": expected a JSON array of tool objects");
        g.tools = t.dump();
      }
      std::vector<ChatMessage> history;
      if (!a->messages.empty()) history = read_messages(a->messages);
      auto engine = load_engine(a->engine, /*one_sequence=*/true);
      if (!engine->has_chat_template())
        fail_arg(a->engine.model + ": no chat template (tokenizer_config.json)");
      if (!a->messages.empty()) {
        GenerateResult r = engine->generate(engine->prepare(history, g), print_piece);
        if (r.finish_reason == FinishReason::error) fail_arg(r.error);
        std::printf("\n");
        print_metrics(r.metrics);
        return 0;
      }
      const bool tty = isatty(0);
      auto reset = [&] {
        history.clear();
        if (!a->system.empty()) history.push_back({"system", a->system});
      };
      reset();
      if (tty)
        std::fprintf(stderr, "chat with %s (/reset, /exit)\n", engine->info().architecture.c_str());
      std::string line;
      for (;;) {
        if (tty) std::fprintf(stderr, "> ");
        if (!std::getline(std::cin, line)) break;
        if (line == "/exit" || line == "/quit") break;
        if (line == "/reset") {
          reset();
          if (tty) std::fprintf(stderr, "(conversation cleared)\n");
          continue;
        }
        if (line.empty()) continue;
        history.push_back({"user", line});
        GenerateResult r = engine->chat(history, g, print_piece);
        std::printf("\n");
        std::fflush(stdout);
        if (r.finish_reason == FinishReason::error) {
          std::fprintf(stderr, "tessera: error: %s\n", r.error.c_str());
          history.pop_back();
          continue;
        }
        history.push_back({"assistant", r.text});
        print_metrics(r.metrics);
      }
      return 0;
    });
  });
}

}  // namespace tessera::cli
