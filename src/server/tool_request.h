// Tool calling on /v1/chat/completions (issue #34): OpenAI's `tools`, `tool_choice` and
// `parallel_tool_calls`, and the grammar that enforces `tool_choice: "required"` or a named
// function in the model family's call format (tool_calls.h reads the same format back).
//
// tool_choice "auto" (the default with tools): the template offers the tools, the model may call
// or answer. "none": the tools are not rendered at all, so nothing can be called (vLLM's
// default; OpenAI keeps them in the prompt but never returns a call). "required": at least one
// call, each to one of the tools, its arguments following that tool's JSON-schema parameters;
// {"type": "function", "function": {"name": N}}: calls to N only. parallel_tool_calls false: at
// most one call (enforced by the grammar where one applies, else only the first call is kept).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/tool_calls.h"
#include "tessera/engine.h"

namespace tessera::server {

struct ToolsRequest {
  enum class Choice { automatic, none, required, named };
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // as given (validated)
  std::vector<std::string> names;                                  // per tool
  Choice choice = Choice::automatic;
  std::string named;  // Choice::named: the function
  bool parallel = true;
  // Tools offered to the model (given, and tool_choice is not "none").
  bool active() const { return !names.empty() && choice != Choice::none; }
};

// `tools`, `tool_choice`, `parallel_tool_calls` of a chat body (with its key order, so that
// schemas and the rendered definitions keep the client's property order). Throws ApiError (400)
// naming the field: a tool that is not {"type": "function", "function": {"name", ...}}, a name
// twice, a named tool_choice that is not among the tools, required without tools, `functions`
// (the deprecated form: use tools).
ToolsRequest parse_tools_request(const nlohmann::ordered_json& body);

// The output constraint for "required" / a named function in format f: one call (or, with
// parallel_tool_calls, one or more), {"name": <a tool's name>, "arguments" (qwen) |
// "parameters" (llama3, gemma): <its parameters' schema>}, Qwen's inside <tool_call> tags.
// Kind none for auto / none. Throws ApiError when f has no tool format.
OutputConstraint tool_call_constraint(const ToolsRequest& t, ToolFormat f);

// An assistant message's "tool_calls" (OpenAI's [{"id", "type": "function", "function": {"name",
// "arguments": JSON text}}]; arguments given as an object are accepted too). Throws ApiError
// naming param.
std::vector<ToolCall> parse_message_tool_calls(const nlohmann::json& calls,
                                               const std::string& param);

}  // namespace tessera::server
