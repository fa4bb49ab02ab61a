// Tool calling in the chat template's inputs (issue #34): a conversation with tool calls and tool
// results, and the tools offered, as the JSON a Hugging Face chat template reads.
//
// transformers' convention (docs "Tool use", chat_templating): tools go in the template's `tools`
// variable as given ({"type": "function", "function": {...}}); an assistant turn's calls are
// "tool_calls": [{"id", "type": "function", "function": {"name", "arguments": <object>}}]
// (Llama 3.1's template prints arguments with `tojson`, so they must be an object, not
// OpenAI's JSON string; Qwen's accepts both); a tool result is {"role": "tool", "content",
// "tool_call_id", "name"}.
//
// A template that never mentions `tools` (Gemma 3's, Llama 3.0's) gets them through the prompt
// instead, by the JSON convention Google documents for Gemma ("Function calling with Gemma"):
// the definitions and the call format in the system turn, each call the assistant made as
// {"name": ..., "parameters": {...}} (several separated by ';', as Llama 3 writes parallel calls),
// each tool result a user turn ```tool_output fence. The model's output in that convention is
// what server/tool_calls.h parses for the gemma and llama3 families.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/engine.h"

namespace tessera {

// What a template's source handles (a template reads a variable only if it names it).
struct TemplateToolSupport {
  bool tools = false;       // the `tools` variable
  bool tool_calls = false;  // assistant turns' tool_calls
  bool tool_role = false;   // turns of role "tool"
};
TemplateToolSupport template_tool_support(const std::string& source);

// The messages in transformers' convention (above). A call's arguments that are not a JSON
// object stay the string they were (the template decides what to do with it).
nlohmann::ordered_json chat_messages_json(const std::vector<ChatMessage>& messages);

// The system text that offers `tools` (a JSON array of OpenAI tool objects) by the JSON convention.
std::string tools_system_prompt(const nlohmann::ordered_json& tools);

struct ChatTemplateInputs {
  nlohmann::ordered_json messages;
  nlohmann::ordered_json context;  // the given context, plus "tools" when the template takes them
};

// The template's inputs for `messages` and `tools_json` ("" or a JSON array of tool objects):
// natively where the template takes tools, by the JSON convention where it mentions no tools at
// all. Throws RequestError: "tools" that are not a JSON array of objects; "messages" naming the
// template's limit when it takes tools but not tool calls or tool turns in the history.
ChatTemplateInputs chat_template_inputs(const std::vector<ChatMessage>& messages,
                                        const std::string& tools_json,
                                        const TemplateToolSupport& support,
                                        nlohmann::ordered_json context);

}  // namespace tessera
