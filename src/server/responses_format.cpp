#include "server/responses_format.h"

#include "server/api_error.h"
#include "server/openai_response.h"

namespace tessera::server {

using nlohmann::json;

namespace {

json opt(const std::optional<std::string>& s) {
  return s ? json(*s) : json(nullptr);
}

json output_text_part(const std::string& text) {
  return {{"type", "output_text"},
          {"text", text},
          {"annotations", json::array()},
          {"logprobs", json::array()}};
}

// The fields every response object carries, as OpenAI's reference lists them.
json envelope(const ResponseInfo& info, const char* status) {
  return {
      {"id", info.id},
      {"object", "response"},
      {"created_at", info.created_at},
      {"status", status},
      {"error", nullptr},
      {"incomplete_details", nullptr},
      {"instructions", opt(info.instructions)},
      {"max_output_tokens", info.max_output_tokens ? json(*info.max_output_tokens) : json(nullptr)},
      {"model", info.model},
      {"output", json::array()},
      {"parallel_tool_calls", true},
      {"previous_response_id", nullptr},
      {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
      {"store", false},
      {"temperature", info.temperature},
      {"text", {{"format", {{"type", "text"}}}}},
      {"tool_choice", "auto"},
      {"tools", json::array()},
      {"top_p", info.top_p},
      {"truncation", "disabled"},
      {"usage", nullptr},
      {"user", opt(info.user)},
      {"metadata", info.metadata}};
}

}  // namespace

json responses_usage(int input_tokens, int cached_tokens, int output_tokens) {
  return {{"input_tokens", input_tokens},
          {"input_tokens_details", {{"cached_tokens", cached_tokens}}},
          {"output_tokens", output_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", input_tokens + output_tokens}};
}

json response_message_item(const std::string& id, const char* status,
                           const std::optional<std::string>& text) {
  json content = json::array();
  if (text) content.push_back(output_text_part(*text));
  return {{"type", "message"},
          {"id", id},
          {"status", status},
          {"role", "assistant"},
          {"content", std::move(content)}};
}

json response_in_progress(const ResponseInfo& info) {
  return envelope(info, "in_progress");
}

json response_object(const ResponseInfo& info, const GenerateResult& r) {
  const bool failed = r.finish_reason == FinishReason::error;
  const bool incomplete =
      r.finish_reason == FinishReason::length || r.finish_reason == FinishReason::cancelled;
  json j = envelope(info, failed ? "failed" : incomplete ? "incomplete" : "completed");
  if (failed) {
    const ApiError e = api_error_from_failed(r.error);
    j["error"] = {{"code", e.status >= 500 ? "server_error" : "invalid_prompt"},
                  {"message", r.error}};
    return j;
  }
  if (incomplete)
    j["incomplete_details"] = {
        {"reason", r.finish_reason == FinishReason::length ? "max_output_tokens" : "cancelled"}};
  j["output"].push_back(
      response_message_item(info.message_id, incomplete ? "incomplete" : "completed", r.text));
  j["usage"] = responses_usage(info.input_tokens, r.metrics.cached_prompt_tokens,
                               static_cast<int>(r.ids.size()));
  return j;
}

std::string ResponsesStreamWriter::emit(const char* type, json body) {
  body["type"] = type;
  body["sequence_number"] = sequence_++;
  return std::string("event: ") + type + "\ndata: " + dump(body) + "\n\n";
}

std::string ResponsesStreamWriter::event(int, const RequestStream::Event& ev) {
  std::string out;
  const std::string& mid = info_.message_id;
  auto at = [&](json j) {
    j["item_id"] = mid;
    j["output_index"] = 0;
    j["content_index"] = 0;
    return j;
  };
  if (!started_) {
    started_ = true;
    out += emit("response.created", {{"response", response_in_progress(info_)}});
    out += emit("response.in_progress", {{"response", response_in_progress(info_)}});
    out += emit(
        "response.output_item.added",
        {{"output_index", 0}, {"item", response_message_item(mid, "in_progress", std::nullopt)}});
    out += emit("response.content_part.added", at({{"part", output_text_part("")}}));
  }
  if (!ev.done) {
    if (ev.piece.empty()) return out;  // text held back (partial UTF-8 or a possible stop)
    out +=
        emit("response.output_text.delta", at({{"delta", ev.piece}, {"logprobs", json::array()}}));
    return out;
  }
  const GenerateResult& r = ev.result;
  json resp = response_object(info_, r);
  if (r.finish_reason == FinishReason::error) {
    out += emit("response.failed", {{"response", std::move(resp)}});
    return out;
  }
  // The deltas add up to the final text (the engine's pieces are that text, in order).
  const std::string& text = r.text;
  const bool completed = resp["status"] == "completed";
  const char* status = completed ? "completed" : "incomplete";
  out += emit("response.output_text.done", at({{"text", text}, {"logprobs", json::array()}}));
  out += emit("response.content_part.done", at({{"part", output_text_part(text)}}));
  out += emit("response.output_item.done",
              {{"output_index", 0}, {"item", response_message_item(mid, status, text)}});
  out += emit(completed ? "response.completed" : "response.incomplete",
              {{"response", std::move(resp)}});
  return out;
}

}  // namespace tessera::server
