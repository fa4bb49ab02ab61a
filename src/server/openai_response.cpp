#include "server/openai_response.h"

#include <random>

namespace tessera::server {

using nlohmann::json;

const char* openai_finish_reason(FinishReason r) {
  switch (r) {
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::cancelled:
      return "abort";
    case FinishReason::error:
      return "error";
  }
  return "stop";
}

json usage_json(int prompt_tokens, int completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

namespace {
// Characters (code points) in UTF-8 text, as OpenAI's text_offset counts them; a partial
// sequence counts its lead byte only.
int code_points(const std::string& s) {
  int n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}
}  // namespace

json completion_logprobs_json(const std::vector<StepLogprobs>& steps, int& text_offset0) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       offsets = json::array();
  for (const auto& s : steps) {
    tokens.push_back(s.chosen.text);
    token_logprobs.push_back(s.chosen.logprob);
    // OpenAI's shape is a {token text: logprob} map; two ids with one text keep the likelier.
    json alts = json::object();
    for (const auto& t : s.top)
      if (!alts.contains(t.text)) alts[t.text] = t.logprob;
    top.push_back(std::move(alts));
    offsets.push_back(text_offset0);
    text_offset0 += code_points(s.chosen.text);
  }
  return {{"tokens", tokens},
          {"token_logprobs", token_logprobs},
          {"top_logprobs", top},
          {"text_offset", offsets}};
}

namespace {
json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}
}  // namespace

json chat_logprob_json(const StepLogprobs& step) {
  json top = json::array();
  for (const auto& t : step.top)
    top.push_back({{"token", t.text}, {"logprob", t.logprob}, {"bytes", bytes_of(t.text)}});
  return {{"token", step.chosen.text},
          {"logprob", step.chosen.logprob},
          {"bytes", bytes_of(step.chosen.text)},
          {"top_logprobs", top}};
}

json chat_logprobs_json(const std::vector<StepLogprobs>& steps) {
  json content = json::array();
  for (const auto& s : steps) content.push_back(chat_logprob_json(s));
  return {{"content", content}};
}

json completion_response(const std::string& id, int64_t created, const std::string& model,
                         json choices, const json& usage) {
  return {{"id", id},       {"object", "text_completion"},   {"created", created},
          {"model", model}, {"choices", std::move(choices)}, {"usage", usage}};
}

json completion_choice(int index, const std::string& text, json logprobs,
                       const char* finish_reason) {
  return {{"index", index},
          {"text", text},
          {"logprobs", std::move(logprobs)},
          {"finish_reason", finish_reason}};
}

json chat_response(const std::string& id, int64_t created, const std::string& model, json choices,
                   const json& usage) {
  return {{"id", id},       {"object", "chat.completion"},   {"created", created},
          {"model", model}, {"choices", std::move(choices)}, {"usage", usage}};
}

json chat_choice(int index, const std::string& content, json logprobs, const char* finish_reason) {
  return {{"index", index},
          {"message", {{"role", "assistant"}, {"content", content}}},
          {"logprobs", std::move(logprobs)},
          {"finish_reason", finish_reason}};
}

json completion_chunk(const std::string& id, int64_t created, const std::string& model, int index,
                      const std::string& text, json logprobs, const char* finish_reason,
                      bool include_usage) {
  json choice = {{"index", index},
                 {"text", text},
                 {"logprobs", std::move(logprobs)},
                 {"finish_reason", finish_reason ? json(finish_reason) : json(nullptr)}};
  json c = {{"id", id},
            {"object", "text_completion"},
            {"created", created},
            {"model", model},
            {"choices", json::array({std::move(choice)})}};
  if (include_usage) c["usage"] = nullptr;
  return c;
}

json chat_chunk(const std::string& id, int64_t created, const std::string& model, int index,
                json delta, json logprobs, const char* finish_reason, bool include_usage) {
  json choice = {{"index", index},
                 {"delta", std::move(delta)},
                 {"logprobs", std::move(logprobs)},
                 {"finish_reason", finish_reason ? json(finish_reason) : json(nullptr)}};
  json c = {{"id", id},
            {"object", "chat.completion.chunk"},
            {"created", created},
            {"model", model},
            {"choices", json::array({std::move(choice)})}};
  if (include_usage) c["usage"] = nullptr;
  return c;
}

json usage_chunk(const std::string& id, int64_t created, const std::string& model,
                 const char* object, const json& usage) {
  return {{"id", id},       {"object", object},         {"created", created},
          {"model", model}, {"choices", json::array()}, {"usage", usage}};
}

std::string new_response_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += hex[rng() & 15];
  return id;
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace tessera::server
