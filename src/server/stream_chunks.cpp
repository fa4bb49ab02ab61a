#include "server/stream_chunks.h"

#include "server/api_error.h"
#include "server/openai_response.h"

namespace tessera::server {

using nlohmann::json;

std::string sse_data(const std::string& payload) {
  return "data: " + payload + "\n\n";
}

ChunkWriter::ChunkWriter(StreamFormat fmt) : fmt_(std::move(fmt)) {
  const size_t n = fmt_.choice_prompt.size();
  started_.assign(n, 0);
  text_offset_.assign(n, 0);
  completion_tokens_.assign(n, 0);
  if (fmt_.tools)
    tool_streams_.assign(n, ToolCallStream(fmt_.tool_format, fmt_.parallel_tool_calls));
}

std::string ChunkWriter::event(int c, const RequestStream::Event& ev) {
  std::string out;
  if (fmt_.chat && !started_[c]) {
    out += sse_data(dump(chat_chunk(fmt_.id, fmt_.created, fmt_.model, c,
                                    {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr,
                                    fmt_.include_usage)));
  }
  started_[c] = 1;
  if (ev.done) {
    const GenerateResult& r = ev.result;
    completion_tokens_[c] = static_cast<int>(r.ids.size());
    if (r.finish_reason == FinishReason::error) {
      out += sse_data(dump(error_json(api_error_from_failed(r.error))));
      return out;
    }
    const char* why = openai_finish_reason(r.finish_reason);
    if (fmt_.tools) {
      ParsedOutput p = tool_streams_[c].finish();
      if (!p.content.empty())
        out +=
            sse_data(dump(chat_chunk(fmt_.id, fmt_.created, fmt_.model, c, {{"content", p.content}},
                                     nullptr, nullptr, fmt_.include_usage)));
      for (json& d : tool_call_deltas(tool_calls_json(p.calls)))
        out += sse_data(dump(chat_chunk(fmt_.id, fmt_.created, fmt_.model, c, std::move(d), nullptr,
                                        nullptr, fmt_.include_usage)));
      if (!p.calls.empty() && r.finish_reason == FinishReason::stop) why = "tool_calls";
    }
    out += sse_data(dump(fmt_.chat ? chat_chunk(fmt_.id, fmt_.created, fmt_.model, c,
                                                json::object(), nullptr, why, fmt_.include_usage)
                                   : completion_chunk(fmt_.id, fmt_.created, fmt_.model, c, "",
                                                      nullptr, why, fmt_.include_usage)));
    return out;
  }
  const bool lp = fmt_.logprobs && ev.logprobs.has_value();
  const std::string piece = fmt_.tools ? tool_streams_[c].push(ev.piece) : ev.piece;
  if (piece.empty() && !lp) return out;  // text held back (partial UTF-8 or a possible stop string)
  json logprobs = nullptr;
  if (lp) {
    logprobs = fmt_.chat ? json{{"content", json::array({chat_logprob_json(*ev.logprobs)})}}
                         : completion_logprobs_json({*ev.logprobs}, text_offset_[c]);
  }
  out += sse_data(dump(fmt_.chat
                           ? chat_chunk(fmt_.id, fmt_.created, fmt_.model, c, {{"content", piece}},
                                        std::move(logprobs), nullptr, fmt_.include_usage)
                           : completion_chunk(fmt_.id, fmt_.created, fmt_.model, c, piece,
                                              std::move(logprobs), nullptr, fmt_.include_usage)));
  return out;
}

std::string ChunkWriter::finish() {
  std::string out;
  if (fmt_.include_usage) {
    int prompt = 0, completion = 0;
    for (int t : fmt_.prompt_tokens) prompt += t;
    for (int t : completion_tokens_) completion += t;
    out += sse_data(dump(usage_chunk(fmt_.id, fmt_.created, fmt_.model,
                                     fmt_.chat ? "chat.completion.chunk" : "text_completion",
                                     usage_json(prompt, completion))));
  }
  return out + "data: [DONE]\n\n";
}

}  // namespace tessera::server
