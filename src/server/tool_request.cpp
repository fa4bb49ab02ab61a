#include "server/tool_request.h"

#include <regex>

#include "server/api_error.h"

namespace tessera::server {

using ojson = nlohmann::ordered_json;
using Choice = ToolsRequest::Choice;

namespace {

bool given(const ojson& body, const char* k) {
  auto it = body.find(k);
  return it != body.end() && !it->is_null();
}

// OpenAI's rule for function names.
bool valid_name(const std::string& n) {
  static const std::regex re("^[A-Za-z0-9_.-]{1,64}$");
  return std::regex_match(n, re);
}

void parse_tools(const ojson& tools, ToolsRequest& r) {
  if (!tools.is_array()) bad_request("'tools' must be a list of tool objects", "tools");
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const ojson& t = tools[i];
    if (!t.is_object()) bad_request("'" + at + "' must be an object", at);
    if (t.contains("type") && t["type"] != "function")
      bad_request("'" + at + ".type' must be \"function\" (the only tool type of chat completions)",
                  at + ".type", "unsupported_parameter");
    if (!t.contains("function") || !t["function"].is_object())
      bad_request("'" + at + ".function' must be an object with a 'name'", at + ".function");
    const ojson& f = t["function"];
    if (!f.contains("name") || !f["name"].is_string() || !valid_name(f["name"].get<std::string>()))
      bad_request("'" + at +
                      ".function.name' must be a string of 1 to 64 letters, digits, '_', '.' "
                      "or '-'",
                  at + ".function.name");
    if (given(f, "parameters") && !f["parameters"].is_object())
      bad_request("'" + at + ".function.parameters' must be a JSON schema (an object)",
                  at + ".function.parameters");
    const std::string name = f["name"].get<std::string>();
    for (const std::string& n : r.names)
      if (n == name) bad_request("two tools are named '" + name + "'", at + ".function.name");
    r.names.push_back(name);
    ojson copy = t;
    copy["type"] = "function";
    r.tools.push_back(std::move(copy));
  }
}

void parse_choice(const ojson& c, ToolsRequest& r) {
  if (c.is_string()) {
    const std::string s = c.get<std::string>();
    if (s == "auto")
      r.choice = Choice::automatic;
    else if (s == "none")
      r.choice = Choice::none;
    else if (s == "required")
      r.choice = Choice::required;
    else
      bad_request(
          "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": "
          "\"function\", \"function\": {\"name\": ...}} (got \"" +
              s + "\")",
          "tool_choice");
    return;
  }
  if (!c.is_object() || !c.contains("function") || !c["function"].is_object() ||
      !c["function"].contains("name") || !c["function"]["name"].is_string())
    bad_request(
        "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", "
        "\"function\": {\"name\": ...}}",
        "tool_choice");
  r.choice = Choice::named;
  r.named = c["function"]["name"].get<std::string>();
}

// {"name": {"const": N}, key: parameters} for tool i.
ojson call_schema(const ojson& tool, const std::string& name, const char* key) {
  ojson params = tool["function"].value("parameters", ojson(nullptr));
  // No parameters: a function of no arguments (OpenAI's reading of an omitted schema).
  if (params.is_null())
    params = {{"type", "object"}, {"properties", ojson::object()}, {"additionalProperties", false}};
  ojson s = ojson::object();
  s["type"] = "object";
  s["properties"] = ojson::object();
  s["properties"]["name"] = {{"const", name}};
  s["properties"][key] = std::move(params);
  s["required"] = {"name", key};
  s["additionalProperties"] = false;
  return s;
}

}  // namespace

ToolsRequest parse_tools_request(const ojson& body) {
  ToolsRequest r;
  if (given(body, "functions") && !(body["functions"].is_array() && body["functions"].empty()))
    bad_request("'functions' (deprecated) is not supported by this server: use 'tools'",
                "functions", "unsupported_parameter");
  if (given(body, "tools")) parse_tools(body["tools"], r);
  if (given(body, "tool_choice")) parse_choice(body["tool_choice"], r);
  if (given(body, "parallel_tool_calls")) {
    if (!body["parallel_tool_calls"].is_boolean())
      bad_request("'parallel_tool_calls' must be a boolean", "parallel_tool_calls");
    r.parallel = body["parallel_tool_calls"].get<bool>();
  }
  if ((r.choice == Choice::required || r.choice == Choice::named) && r.names.empty())
    bad_request("'tool_choice' \"required\" or a named function needs 'tools'", "tool_choice");
  if (r.choice == Choice::named) {
    bool found = false;
    for (const std::string& n : r.names) found |= n == r.named;
    if (!found)
      bad_request("'tool_choice' names the function '" + r.named + "', which is not in 'tools'",
                  "tool_choice");
  }
  return r;
}

OutputConstraint tool_call_constraint(const ToolsRequest& t, ToolFormat f) {
  OutputConstraint c;
  if (t.choice != Choice::required && t.choice != Choice::named) return c;
  if (f == ToolFormat::none)
    bad_request("tessera has no tool-call format for this model family", "tool_choice");
  const char* key = f == ToolFormat::qwen ? "arguments" : "parameters";
  ojson alts = ojson::array();
  for (size_t i = 0; i < t.names.size(); ++i)
    if (t.choice == Choice::required || t.names[i] == t.named)
      alts.push_back(call_schema(t.tools[i], t.names[i], key));
  const ojson schema = alts.size() == 1 ? alts[0] : ojson{{"anyOf", alts}};
  c.kind = OutputConstraint::Kind::json_schema;
  c.text = schema.dump();
  c.field = "tools";
  if (f == ToolFormat::qwen) {  // vLLM hermes_tool_parser.py's blocks, as Qwen's template asks
    c.prefix = "<tool_call>\n";
    c.suffix = "\n</tool_call>";
    c.separator = "\n";
  } else {
    c.separator = ";";  // Llama 3's parallel calls (tool_calls.h)
  }
  c.max_count = t.parallel ? -1 : 1;
  return c;
}

std::vector<ToolCall> parse_message_tool_calls(const nlohmann::json& calls,
                                               const std::string& param) {
  if (!calls.is_array()) bad_request("'" + param + "' must be a list of tool calls", param);
  std::vector<ToolCall> out;
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string at = param + "[" + std::to_string(i) + "]";
    const nlohmann::json& c = calls[i];
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object())
      bad_request("'" + at +
                      "' must be {\"id\", \"type\": \"function\", \"function\": {\"name\", "
                      "\"arguments\"}}",
                  param);
    const nlohmann::json& f = c["function"];
    if (!f.contains("name") || !f["name"].is_string())
      bad_request("'" + at + ".function.name' must be a string", param);
    ToolCall tc;
    tc.name = f["name"].get<std::string>();
    if (c.contains("id") && c["id"].is_string()) tc.id = c["id"].get<std::string>();
    if (!f.contains("arguments") || f["arguments"].is_null()) {
      tc.arguments = "{}";
    } else if (f["arguments"].is_string()) {
      tc.arguments = f["arguments"].get<std::string>();
    } else if (f["arguments"].is_object()) {
      tc.arguments = f["arguments"].dump();
    } else {
      bad_request("'" + at + ".function.arguments' must be a JSON object as text", param);
    }
    out.push_back(std::move(tc));
  }
  return out;
}

}  // namespace tessera::server
