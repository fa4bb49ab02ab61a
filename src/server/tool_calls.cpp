#include "server/tool_calls.h"

#include <nlohmann/json.hpp>

namespace tessera::server {

namespace {

using json = nlohmann::ordered_json;  // keeps the arguments' keys as the model wrote them

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// {"name": "...", "arguments" | "parameters": {...} or a JSON string}: a call, else false.
bool as_call(const json& j, ParsedToolCall& out) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
  out.name = j["name"].get<std::string>();
  const char* key = j.contains("arguments") ? "arguments" : "parameters";
  if (!j.contains(key) || j[key].is_null()) {
    out.arguments = "{}";
  } else if (j[key].is_string()) {
    out.arguments = j[key].get<std::string>();  // already JSON text, as OpenAI sends it
  } else if (j[key].is_object()) {
    out.arguments = j[key].dump();
  } else {
    return false;
  }
  return !out.name.empty();
}

// One JSON value holding a call or a list of calls; false (and nothing added) otherwise.
bool calls_from_json(const std::string& text, std::vector<ParsedToolCall>& out) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return false;
  std::vector<ParsedToolCall> got;
  ParsedToolCall c;
  if (j.is_array()) {
    for (const json& e : j) {
      if (!as_call(e, c)) return false;
      got.push_back(c);
    }
  } else if (as_call(j, c)) {
    got.push_back(c);
  }
  if (got.empty()) return false;
  out.insert(out.end(), got.begin(), got.end());
  return true;
}

ParsedOutput parse_qwen(const std::string& text) {
  static const std::string open = "<tool_call>", close = "</tool_call>";
  ParsedOutput r;
  std::string content;
  size_t at = 0;
  for (;;) {
    const size_t b = text.find(open, at);
    if (b == std::string::npos) break;
    size_t e = text.find(close, b + open.size());
    const size_t body_end = e == std::string::npos ? text.size() : e;
    if (!calls_from_json(trim(text.substr(b + open.size(), body_end - b - open.size())), r.calls))
      return {text, {}};  // a malformed block: the whole output stays content
    content += text.substr(at, b - at);
    at = e == std::string::npos ? text.size() : e + close.size();
  }
  if (r.calls.empty()) return {text, {}};
  content += text.substr(at);
  r.content = trim(content);
  return r;
}

// s split at `sep` outside JSON strings, objects and arrays (a ';' in an argument is no
// separator).
std::vector<std::string> split_top_level(const std::string& s, char sep) {
  std::vector<std::string> parts;
  int depth = 0;
  bool in_string = false, escaped = false;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '{' || c == '[')
      ++depth;
    else if (c == '}' || c == ']')
      --depth;
    else if (c == sep && depth == 0) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(s.substr(start));
  return parts;
}

// The whole output as JSON call(s): after an optional prefix tag or code fence, one value, or
// several separated by ';' (Llama 3's parallel form).
ParsedOutput parse_json_calls(const std::string& text, bool fences) {
  std::string body = trim(text);
  if (body.rfind("<|python_tag|>", 0) == 0) body = trim(body.substr(14));
  if (fences && body.rfind("```", 0) == 0) {
    const size_t nl = body.find('\n');
    const size_t end = body.rfind("```");
    if (nl == std::string::npos || end <= nl) return {text, {}};
    body = trim(body.substr(nl + 1, end - nl - 1));
  }
  if (body.empty() || (body[0] != '{' && body[0] != '[')) return {text, {}};
  ParsedOutput r;
  if (calls_from_json(body, r.calls)) return r;
  for (const std::string& piece : split_top_level(body, ';')) {  // "{...}; {...}"
    const std::string part = trim(piece);
    if (!part.empty() && !calls_from_json(part, r.calls)) return {text, {}};
  }
  if (r.calls.empty()) return {text, {}};
  return r;
}

}  // namespace

ToolFormat tool_format_for(const std::string& model_type) {
  if (model_type.rfind("qwen", 0) == 0) return ToolFormat::qwen;
  if (model_type == "llama") return ToolFormat::llama3;
  if (model_type.rfind("gemma", 0) == 0) return ToolFormat::gemma;
  return ToolFormat::none;
}

ParsedOutput parse_tool_calls(ToolFormat f, const std::string& text) {
  switch (f) {
    case ToolFormat::qwen:
      return parse_qwen(text);
    case ToolFormat::llama3:
      return parse_json_calls(text, /*fences=*/false);
    case ToolFormat::gemma:
      return parse_json_calls(text, /*fences=*/true);
    case ToolFormat::none:
      break;
  }
  return {text, {}};
}

}  // namespace tessera::server
