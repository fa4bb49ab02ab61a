#include "server/tool_output.h"

#include "server/openai_response.h"

namespace tessera::server {

using nlohmann::json;

ParsedOutput parse_tool_output(ToolFormat f, bool parallel, const std::string& text) {
  ParsedOutput p = parse_tool_calls(f, text);
  if (!parallel && p.calls.size() > 1) p.calls.resize(1);
  return p;
}

json tool_calls_json(const std::vector<ParsedToolCall>& calls) {
  json out = json::array();
  for (const ParsedToolCall& c : calls)
    out.push_back({{"id", new_response_id("call_")},
                   {"type", "function"},
                   {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  return out;
}

std::vector<json> tool_call_deltas(const json& tool_calls) {
  std::vector<json> out;
  for (size_t i = 0; i < tool_calls.size(); ++i) {
    const json& c = tool_calls[i];
    out.push_back(
        {{"tool_calls",
          json::array({{{"index", i},
                        {"id", c["id"]},
                        {"type", "function"},
                        {"function", {{"name", c["function"]["name"]}, {"arguments", ""}}}}})}});
    out.push_back({{"tool_calls",
                    json::array({{{"index", i},
                                  {"function", {{"arguments", c["function"]["arguments"]}}}}})}});
  }
  return out;
}

std::string ToolCallStream::push(const std::string& piece) {
  if (holding_all_) {
    held_ += piece;
    return "";
  }
  if (f_ == ToolFormat::qwen) {
    static const std::string tag = "<tool_call>";
    held_ += piece;
    if (const size_t at = held_.find(tag); at != std::string::npos) {
      std::string out = held_.substr(0, at);
      held_.erase(0, at);
      holding_all_ = true;
      return out;
    }
    size_t keep = 0;  // the longest end of the text that may begin the tag
    for (size_t k = std::min(held_.size(), tag.size() - 1); k > 0; --k) {
      if (held_.compare(held_.size() - k, k, tag, 0, k) == 0) {
        keep = k;
        break;
      }
    }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }
  if (f_ == ToolFormat::none || decided_) return piece;
  held_ += piece;
  const size_t b = held_.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";  // only whitespace so far
  const std::string start = held_.substr(b);
  std::vector<std::string> openers = {"{", "[", "<|python_tag|>"};
  if (f_ == ToolFormat::gemma) openers.push_back("```");
  for (const std::string& o : openers) {
    if (start.rfind(o, 0) == 0) {
      decided_ = holding_all_ = true;
      return "";
    }
    if (o.rfind(start, 0) == 0) return "";  // may still become this opener
  }
  decided_ = true;
  std::string out;
  out.swap(held_);
  return out;
}

ParsedOutput ToolCallStream::finish() {
  ParsedOutput p = parse_tool_output(f_, parallel_, held_);
  held_.clear();
  return p;
}

}  // namespace tessera::server
