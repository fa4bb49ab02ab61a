// Server-sent events for streamed completions: turns the engine's per-token events into
// OpenAI's chunks ("data: {...}\n\n"), ending in "data: [DONE]\n\n".
// Per choice: (chat) a first chunk with delta {"role": "assistant", "content": ""}; one chunk per
// token event whose text is non-empty (or that carries logprobs when asked); a last chunk with
// the finish reason. A choice that fails in flight sends {"error": {...}} instead, which the
// official clients raise as an APIError. With stream_options.include_usage every chunk carries
// "usage": null and a last chunk before [DONE] has "choices": [] and the usage.
// No HTTP here (tests/server checks it directly); sse.cpp writes it to the connection.
#pragma once

#include <string>
#include <vector>

#include "server/tool_output.h"
#include "tessera/engine.h"

namespace tessera::server {

std::string sse_data(const std::string& payload);  // "data: <payload>\n\n"

struct StreamFormat {
  bool chat = false;
  std::string id, model;
  int64_t created = 0;
  bool include_usage = false;
  bool logprobs = false;
  std::vector<int> choice_prompt;  // per choice: which prompt it continues
  std::vector<int> prompt_tokens;  // per prompt
  // Chat with tools offered: text that may be a call waits (ToolCallStream), calls go out as
  // delta.tool_calls at the end and the finish reason is "tool_calls".
  bool tools = false;
  ToolFormat tool_format = ToolFormat::none;
  bool parallel_tool_calls = true;
};

class ChunkWriter {
 public:
  explicit ChunkWriter(StreamFormat fmt);
  // SSE text for one event of choice `choice`.
  std::string event(int choice, const RequestStream::Event& ev);
  // The usage chunk (when asked) and [DONE]; call once every choice is done.
  std::string finish();

 private:
  StreamFormat fmt_;
  std::vector<char> started_;
  std::vector<int> text_offset_;
  std::vector<int> completion_tokens_;
  std::vector<ToolCallStream> tool_streams_;  // per choice, when fmt.tools
};

}  // namespace tessera::server
