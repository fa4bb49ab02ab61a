// A chat choice's output when tools are offered: the text parsed into content and OpenAI
// tool_calls (tool_calls.h per family), whole (a chat.completion) or streamed (chunks'
// delta.tool_calls). Pure: tests/server checks the pieces without a model.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/tool_calls.h"

namespace tessera::server {

// The output's calls (at most one when !parallel: the first) and the rest as content.
ParsedOutput parse_tool_output(ToolFormat f, bool parallel, const std::string& text);

// OpenAI's message.tool_calls: [{"id": "call_...", "type": "function", "function": {"name",
// "arguments"}}], fresh ids.
nlohmann::json tool_calls_json(const std::vector<ParsedToolCall>& calls);

// The deltas that stream those calls, two per call as OpenAI sends them: {"tool_calls":
// [{"index", "id", "type", "function": {"name", "arguments": ""}}]}, then {"tool_calls":
// [{"index", "function": {"arguments": ...}}]}.
std::vector<nlohmann::json> tool_call_deltas(const nlohmann::json& tool_calls);

// Streaming: which text can go out as content now, and which must wait because it may be a
// call. Qwen: content until "<tool_call>" (a partial tag at the end waits); llama3 / gemma: an
// output that opens with '{', '[', <|python_tag|> or a ``` fence (after whitespace) waits to the
// end, anything else is content at once.
class ToolCallStream {
 public:
  ToolCallStream(ToolFormat f, bool parallel) : f_(f), parallel_(parallel) {}
  // The content to send now for the next piece of text.
  std::string push(const std::string& piece);
  // At the end: the held text parsed (its content not yet sent, and the calls).
  ParsedOutput finish();

 private:
  ToolFormat f_;
  bool parallel_;
  std::string held_;
  bool holding_all_ = false;  // a call (may have) started: hold to the end
  bool decided_ = false;      // llama3 / gemma: the output's opening was seen
};

}  // namespace tessera::server
