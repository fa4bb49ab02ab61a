#include "chat/chat_tools.h"

#include <regex>

namespace tessera {

using ojson = nlohmann::ordered_json;

namespace {

bool names(const std::string& source, const char* pattern) {
  return std::regex_search(source, std::regex(pattern));
}

// A call's arguments as the template wants them: the object (ordered as the client wrote it).
ojson arguments_value(const std::string& text) {
  ojson a = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (a.is_discarded() || !a.is_object()) return text;
  return a;
}

bool has_tool_history(const std::vector<ChatMessage>& messages) {
  for (const auto& m : messages)
    if (m.role == "tool" || !m.tool_calls.empty()) return true;
  return false;
}

// {"name": ..., "parameters": {...}}: the call as the JSON convention writes it.
std::string convention_call(const ToolCall& c) {
  ojson j = ojson::object();
  j["name"] = c.name;
  j["parameters"] = arguments_value(c.arguments.empty() ? "{}" : c.arguments);
  return j.dump();
}

// The conversation rewritten by the JSON convention (chat_tools.h): tools into the system turn,
// calls into assistant text, results into user turns; consecutive user turns merged so that
// templates which require alternating roles (Gemma's) accept it.
ojson convention_messages(const std::vector<ChatMessage>& messages, const ojson& tools) {
  std::vector<std::pair<std::string, std::string>> turns;  // role, content
  bool after_result = false;
  for (const ChatMessage& m : messages) {
    std::string role = m.role, content = m.content;
    if (m.role == "assistant" && !m.tool_calls.empty()) {
      std::string calls;
      for (const ToolCall& c : m.tool_calls)
        calls += (calls.empty() ? "" : ";") + convention_call(c);
      content = content.empty() ? calls : content + "\n\n" + calls;
    } else if (m.role == "tool") {
      role = "user";
      content = "```tool_output\n" + m.content + "\n```";
    }
    const bool merge = role == "user" && !turns.empty() && turns.back().first == "user" &&
                       (m.role == "tool" || after_result);
    after_result = m.role == "tool";
    if (merge) {
      turns.back().second += "\n\n" + content;  // a result next to a result or a user turn
      continue;
    }
    turns.emplace_back(role, content);
  }
  if (!tools.empty()) {
    const std::string offer = tools_system_prompt(tools);
    if (!turns.empty() && turns.front().first == "system") {
      turns.front().second = offer + "\n\n" + turns.front().second;
    } else {
      turns.insert(turns.begin(), {"system", offer});
    }
  }
  ojson out = ojson::array();
  for (auto& [role, content] : turns) out.push_back({{"role", role}, {"content", content}});
  return out;
}

}  // namespace

TemplateToolSupport template_tool_support(const std::string& source) {
  TemplateToolSupport s;
  s.tools = names(source, R"(\btools\b)");
  s.tool_calls = names(source, R"(\btool_calls\b)");
  s.tool_role = names(source, R"(['"]tool['"])");
  return s;
}

ojson chat_messages_json(const std::vector<ChatMessage>& messages) {
  ojson j = ojson::array();
  for (const ChatMessage& m : messages) {
    ojson o = {{"role", m.role}, {"content", m.content}};
    if (!m.tool_calls.empty()) {
      ojson calls = ojson::array();
      for (const ToolCall& c : m.tool_calls) {
        ojson call = ojson::object();
        if (!c.id.empty()) call["id"] = c.id;
        call["type"] = "function";
        call["function"] = {
            {"name", c.name},
            {"arguments", arguments_value(c.arguments.empty() ? "{}" : c.arguments)}};
        calls.push_back(std::move(call));
      }
      o["tool_calls"] = std::move(calls);
    }
    if (m.role == "tool") {
      if (!m.tool_call_id.empty()) o["tool_call_id"] = m.tool_call_id;
      if (!m.name.empty()) o["name"] = m.name;
    }
    j.push_back(std::move(o));
  }
  return j;
}

std::string tools_system_prompt(const ojson& tools) {
  // Google's wording for Gemma ("Function calling with Gemma"), the definitions one per line.
  std::string s =
      "You have access to functions. If you decide to invoke any of the function(s), you MUST "
      "put it in the format of\n{\"name\": function name, \"parameters\": dictionary of argument "
      "name and its value}\n\nYou SHOULD NOT include any other text in the response if you call "
      "a function\n";
  for (const ojson& t : tools) s += "\n" + (t.contains("function") ? t["function"] : t).dump();
  return s;
}

ChatTemplateInputs chat_template_inputs(const std::vector<ChatMessage>& messages,
                                        const std::string& tools_json,
                                        const TemplateToolSupport& support, ojson context) {
  ojson tools = ojson::array();
  if (!tools_json.empty()) {
    tools = ojson::parse(tools_json, nullptr, /*allow_exceptions=*/false);
    if (tools.is_discarded() || !tools.is_array())
      throw RequestError("tools", "'tools' must be a JSON array of tool objects");
    for (const ojson& t : tools)
      if (!t.is_object()) throw RequestError("tools", "'tools' must hold objects");
  }
  const bool history = has_tool_history(messages);
  if (!support.tools && (!tools.empty() || history))
    return {convention_messages(messages, tools), std::move(context)};
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!messages[i].tool_calls.empty() && !support.tool_calls)
      throw RequestError(at + ".tool_calls",
                         "this model's chat template takes tools but does not render an "
                         "assistant turn's tool_calls (" +
                             at + ")");
    if (messages[i].role == "tool" && !support.tool_role)
      throw RequestError(
          at + ".role",
          "this model's chat template takes tools but has no 'tool' role (" + at + ")");
  }
  if (!tools.empty()) context["tools"] = std::move(tools);
  return {chat_messages_json(messages), std::move(context)};
}

}  // namespace tessera
