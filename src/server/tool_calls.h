// Tool calls in a model's output, per family convention (issue #34's tool calling; not yet wired
// into the chat route): the text is split into the content and OpenAI-style calls (a function
// name and its arguments as JSON text). Conventions, as vLLM's tool parsers read them:
//   qwen   (Qwen 2.5 / 3, Hermes style): <tool_call>\n{"name": ..., "arguments":
//   {...}}\n</tool_call>
//          blocks, content around them (vLLM hermes_tool_parser.py);
//   llama3 (Llama 3.1+ JSON tool calling): the whole output one JSON object {"name": ...,
//          "parameters": {...}} (or several separated by ';'), optionally after <|python_tag|>
//          (vLLM llama_tool_parser.py);
//   gemma  (Gemma 3 prompts' JSON convention): the same JSON, optionally fenced as ```json or
//          ```tool_code, or a JSON array of calls.
// Output that does not follow the convention is content, unchanged: no call is invented.
#pragma once

#include <string>
#include <vector>

namespace tessera::server {

enum class ToolFormat { none, qwen, llama3, gemma };

// The convention of a model from its ModelInfo::model_type ("qwen2", "qwen3", "llama",
// "gemma3_text", ...); none for other families.
ToolFormat tool_format_for(const std::string& model_type);

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // a JSON object as text ("{}" when the model gave none)
};

struct ParsedOutput {
  std::string content;  // the text that is not a call (trimmed when there are calls)
  std::vector<ParsedToolCall> calls;
};

ParsedOutput parse_tool_calls(ToolFormat f, const std::string& text);

}  // namespace tessera::server
