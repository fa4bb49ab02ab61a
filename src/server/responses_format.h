// tessera results -> the Responses API's objects and stream events
// (https://platform.openai.com/docs/api-reference/responses/object and .../responses-streaming):
// a "response" object whose output is one assistant message item with one output_text part, and
// for stream: true the typed events, each "event: <type>\ndata: {..., "sequence_number"}\n\n":
//   response.created, response.in_progress, response.output_item.added,
//   response.content_part.added, response.output_text.delta (one per piece of text),
//   response.output_text.done, response.content_part.done, response.output_item.done, then
//   response.completed (finished by a stop), response.incomplete (the token limit; reason
//   "max_output_tokens") or response.failed (with the error). No "[DONE]": OpenAI sends none.
// Pure functions over JSON (tests/server/test_responses.cpp checks them without a model).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/stream_writer.h"
#include "tessera/engine.h"

namespace tessera::server {

// What a response object echoes of its request.
struct ResponseInfo {
  std::string id;          // "resp_..."
  std::string message_id;  // "msg_..."
  std::string model;
  int64_t created_at = 0;
  std::optional<std::string> instructions;
  std::optional<int> max_output_tokens;
  float temperature = 1.0f, top_p = 1.0f;
  nlohmann::json metadata = nlohmann::json::object();
  std::optional<std::string> user;
  int input_tokens = 0;
};

// {"input_tokens", "input_tokens_details": {"cached_tokens"}, "output_tokens",
//  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens"}
nlohmann::json responses_usage(int input_tokens, int cached_tokens, int output_tokens);

// The message item: {"type": "message", "id", "status", "role": "assistant", "content": [...]};
// content holds one output_text part unless text is nullopt (an item just added).
nlohmann::json response_message_item(const std::string& id, const char* status,
                                     const std::optional<std::string>& text);

// A finished generation's response object: status "completed", "incomplete" (the token limit)
// or "failed" (with "error"). The in-progress form (the first stream events): in_progress().
nlohmann::json response_object(const ResponseInfo& info, const GenerateResult& r);
nlohmann::json response_in_progress(const ResponseInfo& info);

class ResponsesStreamWriter : public StreamWriter {
 public:
  explicit ResponsesStreamWriter(ResponseInfo info) : info_(std::move(info)) {}
  std::string event(int choice, const RequestStream::Event& ev) override;
  std::string finish() override { return ""; }

 private:
  std::string emit(const char* type, nlohmann::json body);
  ResponseInfo info_;
  bool started_ = false;
  int sequence_ = 0;
};

}  // namespace tessera::server
