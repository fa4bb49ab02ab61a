// tessera results -> OpenAI response bodies and stream chunks (the shapes of OpenAI's API
// reference: text_completion, chat.completion, chat.completion.chunk, logprobs objects, usage).
// Pure functions over JSON so that tests/server can check the shapes without a model.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/engine.h"

namespace tessera::server {

// "stop" or "length" (a cancelled request reports "abort", as vLLM does).
const char* openai_finish_reason(FinishReason r);

nlohmann::json usage_json(int prompt_tokens, int completion_tokens);

// Completions' logprobs object for steps, text offsets (in characters) counted from text_offset0:
// {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{token: logprob}...], "text_offset":
// [...]}. Advances text_offset0 past the steps' token texts (streams call it chunk by chunk).
nlohmann::json completion_logprobs_json(const std::vector<StepLogprobs>& steps, int& text_offset0);

// One entry of chat's logprobs.content: {"token", "logprob", "bytes", "top_logprobs": [...]}.
nlohmann::json chat_logprob_json(const StepLogprobs& step);
// {"content": [...]} for all steps.
nlohmann::json chat_logprobs_json(const std::vector<StepLogprobs>& steps);

// Response envelopes: {"id", "object", "created", "model", "choices": [...], "usage"}.
nlohmann::json completion_response(const std::string& id, int64_t created, const std::string& model,
                                   nlohmann::json choices, const nlohmann::json& usage);
nlohmann::json completion_choice(int index, const std::string& text, nlohmann::json logprobs,
                                 const char* finish_reason);
nlohmann::json chat_response(const std::string& id, int64_t created, const std::string& model,
                             nlohmann::json choices, const nlohmann::json& usage);
nlohmann::json chat_choice(int index, const std::string& content, nlohmann::json logprobs,
                           const char* finish_reason);

// Stream chunks. finish_reason nullptr: null. include_usage: the chunk carries "usage": null
// (OpenAI's shape when stream_options.include_usage is set).
nlohmann::json completion_chunk(const std::string& id, int64_t created, const std::string& model,
                                int index, const std::string& text, nlohmann::json logprobs,
                                const char* finish_reason, bool include_usage);
// delta: {"role": "assistant", "content": ""} for a choice's first chunk, {"content": ...}
// after, {} with the finish reason at the end.
nlohmann::json chat_chunk(const std::string& id, int64_t created, const std::string& model,
                          int index, nlohmann::json delta, nlohmann::json logprobs,
                          const char* finish_reason, bool include_usage);
// The include_usage chunk: "choices": [] and the usage.
nlohmann::json usage_chunk(const std::string& id, int64_t created, const std::string& model,
                           const char* object, const nlohmann::json& usage);

// "cmpl-" / "chatcmpl-" followed by 24 random hex digits.
std::string new_response_id(const char* prefix);

// Compact JSON text; invalid UTF-8 (a partial token's bytes) becomes U+FFFD instead of throwing.
std::string dump(const nlohmann::json& j);

}  // namespace tessera::server
