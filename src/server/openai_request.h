// OpenAI request bodies -> tessera option structs. Pure functions over JSON (no HTTP, no engine)
// so that tests/server can check every type and range error; they throw ApiError (400) naming
// the parameter at fault. Ranges the engine owns (temperature, top_p, ...) are left to
// Engine::prepare, which the routes call next.
//
// Shapes follow OpenAI's API reference for /v1/completions and /v1/chat/completions; vLLM's
// sampling extensions are accepted too (top_k, min_p, repetition_penalty, min_tokens,
// ignore_eos, stop_token_ids).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/tool_request.h"
#include "tessera/engine.h"

namespace tessera::server {

struct CompletionRequest {
  std::string model;            // empty when not given
  std::vector<Prompt> prompts;  // "prompt": a string, strings, token ids, or lists of token ids
  GenerateOptions gen;          // max_tokens defaults to 16, as OpenAI's
  int n = 1;                    // choices per prompt
  bool stream = false, include_usage = false;
  std::optional<int> logprobs;  // "logprobs": N -> the chosen token and the N most likely
};

struct ChatRequest {
  std::string model;
  std::vector<ChatMessage> messages;
  GenerateOptions gen;
  bool max_tokens_given = false;  // absent: up to the end of the context
  int n = 1;
  bool stream = false, include_usage = false;
  bool logprobs = false;  // top_logprobs in gen.sampling.top_logprobs
  ToolsRequest tools;     // tools, tool_choice, parallel_tool_calls
};

// POST /v1/classify (tessera's): {"prompt": <as completions>, "top_logprobs": N,
// "return_logits": bool, "add_special_tokens": bool, sampling fields (temperature 0 default)}.
struct ClassifyRequest {
  std::string model;
  std::vector<Prompt> prompts;
  ClassifyOptions opts;
};

// The body as a JSON object; 400 naming the position when it is not valid JSON or not an object.
nlohmann::json parse_json_body(const std::string& body);

CompletionRequest parse_completion_request(const nlohmann::json& body);
// `ordered`: the same body parsed with its key order (tools and schemas keep it); without it,
// the order is nlohmann::json's (sorted).
ChatRequest parse_chat_request(const nlohmann::json& body,
                               const nlohmann::ordered_json* ordered = nullptr);
ClassifyRequest parse_classify_request(const nlohmann::json& body);

// Limits the parser enforces.
inline constexpr int kMaxChoices = 128;     // n
inline constexpr int kMaxPrompts = 4096;    // prompts in one request
inline constexpr int kMaxTopLogprobs = 20;  // as the engine's

}  // namespace tessera::server
