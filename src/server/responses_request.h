// POST /v1/responses request bodies -> tessera options: OpenAI's Responses API
// (https://platform.openai.com/docs/api-reference/responses/create), its stateless subset.
//   input:        a string (one user turn) or a list of message items
//                 ({"type"?: "message", "role", "content": string | [{"type": "input_text" |
//                 "output_text", "text"}]}); other item and part types are refused by name
//   instructions: a system turn before the input
//   max_output_tokens, temperature, top_p, stream; metadata (echoed), user, parallel_tool_calls,
//   truncation "disabled", text.format ({"type": "text" | "json_object"}, or "json_schema" with
//   its "schema": structured output, GenerateOptions::constraint), tool_choice "none"/"auto"
//   without tools
// Refused with a 400 naming the field: store true and previous_response_id (nothing is kept
// between requests), conversation, tools, reasoning, include, background.
// Pure over JSON (no HTTP, no engine): tests/server/test_responses.cpp checks it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tessera/engine.h"

namespace tessera::server {

struct ResponsesRequest {
  std::string model;
  std::vector<ChatMessage> messages;  // instructions (as "system") then the input's items
  std::optional<std::string> instructions;
  GenerateOptions gen;  // max_output_tokens in gen.max_tokens when given
  bool max_tokens_given = false;
  bool stream = false;
  nlohmann::json metadata = nlohmann::json::object();
  std::optional<std::string> user;
};

ResponsesRequest parse_responses_request(const nlohmann::json& body);

}  // namespace tessera::server
