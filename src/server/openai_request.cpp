#include "server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/json_limits.h"
#include "server/api_error.h"
#include "server/response_format.h"
#include "server/tool_request.h"

namespace tessera::server {

using nlohmann::json;

namespace {

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::number_float:
      return "a number";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    default:
      return "an unsupported value";
  }
}

[[noreturn]] void wrong_type(const std::string& key, const char* want, const json& got) {
  bad_request("'" + key + "' must be " + want + ", not " + type_name(got), key);
}

// Typed access to one object's fields: null counts as absent (clients send explicit nulls).
class Fields {
 public:
  explicit Fields(const json& j) : j_(j) {}
  bool has(const char* key) const {
    auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }
  const json& at(const char* key) const { return j_.at(key); }

  double number(const char* key) const {
    const json& v = at(key);
    if (!v.is_number()) wrong_type(key, "a number", v);
    return v.get<double>();
  }
  float real(const char* key) const {
    const double d = number(key);
    if (std::fabs(d) > std::numeric_limits<float>::max())
      bad_request("'" + std::string(key) + "' is out of range", key);
    return static_cast<float>(d);
  }
  // Integers, and floats with an integral value (16.0), within [lo, hi].
  int64_t integer(const char* key, int64_t lo = std::numeric_limits<int32_t>::min(),
                  int64_t hi = std::numeric_limits<int32_t>::max()) const {
    const json& v = at(key);
    int64_t out = 0;
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() &&
          v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        bad_request("'" + std::string(key) + "' is out of range", key);
      out = v.get<int64_t>();
    } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
               std::fabs(v.get<double>()) < 9e18) {
      out = static_cast<int64_t>(v.get<double>());
    } else {
      wrong_type(key, "an integer", v);
    }
    if (out < lo || out > hi)
      bad_request("'" + std::string(key) + "' must be in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "] (got " + std::to_string(out) + ")",
                  key);
    return out;
  }
  bool boolean(const char* key) const {
    const json& v = at(key);
    if (!v.is_boolean()) wrong_type(key, "a boolean", v);
    return v.get<bool>();
  }
  std::string string(const char* key) const {
    const json& v = at(key);
    if (!v.is_string()) wrong_type(key, "a string", v);
    return v.get<std::string>();
  }

 private:
  const json& j_;
};

void require_object(const json& body) {
  if (!body.is_object())
    bad_request(std::string("the request body must be a JSON object, not ") + type_name(body));
}

// Parameters tessera cannot honour are refused rather than silently ignored (chat takes tools:
// tool_request.h).
void refuse_unsupported(const Fields& f, const json& body, bool chat) {
  if (f.has("echo") && f.boolean("echo"))
    bad_request("'echo' is not supported by this server", "echo", "unsupported_parameter");
  if (f.has("suffix") && !(body["suffix"].is_string() && body["suffix"].get<std::string>().empty()))
    bad_request("'suffix' is not supported by this server", "suffix", "unsupported_parameter");
  if (f.has("logit_bias") && !(body["logit_bias"].is_object() && body["logit_bias"].empty()))
    bad_request("'logit_bias' is not supported by this server", "logit_bias",
                "unsupported_parameter");
  if (chat) return;
  for (const char* k : {"tools", "functions"})
    if (f.has(k) && !(body[k].is_array() && body[k].empty()))
      bad_request("'" + std::string(k) + "' (tool calling) is not supported by this server", k,
                  "unsupported_parameter");
}

std::string model_field(const Fields& f) {
  return f.has("model") ? f.string("model") : "";
}

// "prompt": "text" | ["text", ...] | [id, ...] | [[id, ...], ...]
std::vector<Prompt> parse_prompts(const json& body, const char* key) {
  Fields f(body);
  if (!f.has(key)) bad_request("'" + std::string(key) + "' is required", key);
  const json& p = body[key];
  std::vector<Prompt> out;
  auto ids_of = [&](const json& arr) {
    std::vector<int32_t> ids;
    ids.reserve(arr.size());
    for (const auto& v : arr) {
      if (!v.is_number_integer())
        bad_request("'" + std::string(key) +
                        "' must be a string, a list of strings, a list of token ids or a list "
                        "of token-id lists (found " +
                        type_name(v) + " in a token list)",
                    key);
      const int64_t id = v.get<int64_t>();
      if (id < 0 || id > std::numeric_limits<int32_t>::max())
        bad_request(
            "'" + std::string(key) + "': token id " + std::to_string(id) + " is out of range", key);
      ids.push_back(static_cast<int32_t>(id));
    }
    if (ids.empty()) bad_request("'" + std::string(key) + "' holds an empty token list", key);
    return ids;
  };
  if (p.is_string()) {
    out.emplace_back(p.get<std::string>());
  } else if (p.is_array()) {
    if (p.empty()) bad_request("'" + std::string(key) + "' must not be an empty list", key);
    const json& first = p[0];
    if (first.is_string()) {
      for (const auto& v : p) {
        if (!v.is_string())
          bad_request(
              "'" + std::string(key) + "' mixes strings and " + type_name(v) + " in one list", key);
        out.emplace_back(v.get<std::string>());
      }
    } else if (first.is_number_integer()) {
      out.emplace_back(ids_of(p));
    } else if (first.is_array()) {
      for (const auto& v : p) {
        if (!v.is_array())
          bad_request("'" + std::string(key) + "' mixes token-id lists and " + type_name(v), key);
        out.emplace_back(ids_of(v));
      }
    } else {
      bad_request("'" + std::string(key) +
                      "' must be a string, a list of strings, a list of token ids or a list of "
                      "token-id lists (found " +
                      type_name(first) + ")",
                  key);
    }
  } else {
    wrong_type(key, "a string or a list", p);
  }
  if (out.size() > static_cast<size_t>(kMaxPrompts))
    bad_request("too many prompts in one request (" + std::to_string(out.size()) + "; at most " +
                    std::to_string(kMaxPrompts) + ")",
                key);
  return out;
}

// Sampling and stopping fields shared by completions, chat and classify.
void parse_sampling(const Fields& f, SamplingOptions& s) {
  if (f.has("temperature")) s.temperature = f.real("temperature");
  if (f.has("top_p")) s.top_p = f.real("top_p");
  if (f.has("top_k")) {
    const int64_t k = f.integer("top_k", -1);
    s.top_k = k < 0 ? 0 : static_cast<int>(k);  // vLLM: -1 disables it
  }
  if (f.has("min_p")) s.min_p = f.real("min_p");
  if (f.has("presence_penalty")) s.presence_penalty = f.real("presence_penalty");
  if (f.has("frequency_penalty")) s.frequency_penalty = f.real("frequency_penalty");
  if (f.has("repetition_penalty")) s.repetition_penalty = f.real("repetition_penalty");
  if (f.has("seed"))
    s.seed = static_cast<uint64_t>(f.integer("seed", std::numeric_limits<int64_t>::min(),
                                             std::numeric_limits<int64_t>::max()));
}

void parse_generation(const Fields& f, const json& body, GenerateOptions& g) {
  parse_sampling(f, g.sampling);
  if (f.has("stop")) {
    const json& st = body["stop"];
    if (st.is_string()) {
      g.stop.push_back(st.get<std::string>());
    } else if (st.is_array()) {
      for (const auto& v : st) {
        if (!v.is_string()) bad_request("'stop' must be a string or a list of strings", "stop");
        g.stop.push_back(v.get<std::string>());
      }
    } else {
      wrong_type("stop", "a string or a list of strings", st);
    }
  }
  if (f.has("stop_token_ids")) {
    const json& st = body["stop_token_ids"];
    if (!st.is_array()) wrong_type("stop_token_ids", "a list of token ids", st);
    for (const auto& v : st) {
      if (!v.is_number_integer())
        bad_request("'stop_token_ids' must be a list of token ids", "stop_token_ids");
      g.stop_token_ids.push_back(
          static_cast<int32_t>(std::clamp<int64_t>(v.get<int64_t>(), -1, INT32_MAX)));
    }
  }
  if (f.has("min_tokens")) g.min_tokens = static_cast<int>(f.integer("min_tokens"));
  if (f.has("ignore_eos")) g.ignore_eos = f.boolean("ignore_eos");
  parse_output_constraint(body, g.constraint);  // response_format and its kin
}

void parse_stream(const Fields& f, const json& body, bool& stream, bool& include_usage) {
  if (f.has("stream")) stream = f.boolean("stream");
  if (f.has("stream_options")) {
    const json& so = body["stream_options"];
    if (!so.is_object()) wrong_type("stream_options", "an object", so);
    if (!stream)
      bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
    Fields sf(so);
    if (sf.has("include_usage")) {
      if (!so["include_usage"].is_boolean())
        wrong_type("stream_options.include_usage", "a boolean", so["include_usage"]);
      include_usage = so["include_usage"].get<bool>();
    }
  }
}

int parse_n(const Fields& f) {
  if (!f.has("n")) return 1;
  return static_cast<int>(f.integer("n", 1, kMaxChoices));
}

// Content: a string, or a list of parts of which only {"type": "text"} ones are supported.
std::string message_content(const json& m, size_t i, const std::string& role) {
  const std::string param = "messages[" + std::to_string(i) + "].content";
  auto it = m.find("content");
  if (it == m.end() || it->is_null()) {
    if (role == "assistant") return "";  // an assistant turn that only called tools
    bad_request("'" + param + "' is required", param);
  }
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) wrong_type(param, "a string or a list of content parts", *it);
  std::string text;
  for (const auto& part : *it) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      bad_request("'" + param + "' parts must be objects with a 'type'", param);
    if (part["type"] != "text")
      bad_request("content parts of type '" + part["type"].get<std::string>() +
                      "' are not supported (only 'text')",
                  param, "unsupported_parameter");
    if (!part.contains("text") || !part["text"].is_string())
      bad_request("a text part needs a 'text' string", param);
    text += part["text"].get<std::string>();
  }
  return text;
}

}  // namespace

json parse_json_body(const std::string& body) {
  if (body.empty()) bad_request("the request body is empty (expected a JSON object)");
  if (json_depth_overflow(body) != std::string::npos)  // core/json_limits.h: why
    bad_request("the request body nests JSON deeper than " + std::to_string(kMaxJsonDepth) +
                " levels");
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    std::string what = e.what();
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    bad_request("the request body is not valid JSON: " + what);
  }
  require_object(j);
  return j;
}

CompletionRequest parse_completion_request(const json& body) {
  require_object(body);
  Fields f(body);
  refuse_unsupported(f, body, /*chat=*/false);
  CompletionRequest r;
  r.model = model_field(f);
  r.prompts = parse_prompts(body, "prompt");
  r.gen.max_tokens = 16;
  if (f.has("max_tokens")) r.gen.max_tokens = static_cast<int>(f.integer("max_tokens"));
  parse_generation(f, body, r.gen);
  r.n = parse_n(f);
  if (f.has("best_of") && f.integer("best_of", 1, kMaxChoices) != r.n)
    bad_request("'best_of' different from 'n' is not supported by this server", "best_of",
                "unsupported_parameter");
  parse_stream(f, body, r.stream, r.include_usage);
  if (f.has("logprobs")) {
    const json& lp = body["logprobs"];
    // OpenAI's completions take an integer; a boolean here is a chat-API habit worth naming.
    if (lp.is_boolean())
      bad_request(
          "'logprobs' must be an integer in [0, 20] for completions (a boolean is the chat API's "
          "form)",
          "logprobs");
    r.logprobs = static_cast<int>(f.integer("logprobs", 0, kMaxTopLogprobs));
    r.gen.sampling.logprobs = true;
    r.gen.sampling.top_logprobs = *r.logprobs;
  }
  return r;
}

ChatRequest parse_chat_request(const json& body, const nlohmann::ordered_json* ordered) {
  require_object(body);
  Fields f(body);
  refuse_unsupported(f, body, /*chat=*/true);
  ChatRequest r;
  r.model = model_field(f);
  if (!f.has("messages")) bad_request("'messages' is required", "messages");
  const json& ms = body["messages"];
  if (!ms.is_array()) wrong_type("messages", "a list of messages", ms);
  if (ms.empty()) bad_request("'messages' must not be empty", "messages");
  for (size_t i = 0; i < ms.size(); ++i) {
    const json& m = ms[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) wrong_type(param, "an object", m);
    if (!m.contains("role") || !m["role"].is_string())
      bad_request("'" + param + ".role' must be a string", param + ".role");
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";  // OpenAI's newer name for the system turn
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      bad_request("'" + param + ".role' must be system, developer, user, assistant or tool (got '" +
                      role + "')",
                  param + ".role");
    ChatMessage cm{role, message_content(m, i, role)};
    if (auto tc = m.find("tool_calls"); tc != m.end() && !tc->is_null()) {
      if (role != "assistant")
        bad_request("only assistant messages carry 'tool_calls'", param + ".tool_calls");
      cm.tool_calls = parse_message_tool_calls(*tc, param + ".tool_calls");
    }
    if (role == "tool") {
      for (const char* k : {"tool_call_id", "name"}) {
        auto v = m.find(k);
        if (v == m.end() || v->is_null()) continue;
        if (!v->is_string()) wrong_type(param + "." + k, "a string", *v);
        (k[0] == 'n' ? cm.name : cm.tool_call_id) = v->get<std::string>();
      }
    }
    r.messages.push_back(std::move(cm));
  }
  // max_completion_tokens replaces the deprecated max_tokens; either may come.
  for (const char* k : {"max_tokens", "max_completion_tokens"}) {
    if (f.has(k)) {
      r.gen.max_tokens = static_cast<int>(f.integer(k));
      r.max_tokens_given = true;
    }
  }
  parse_generation(f, body, r.gen);
  r.n = parse_n(f);
  parse_stream(f, body, r.stream, r.include_usage);
  if (f.has("logprobs")) r.logprobs = f.boolean("logprobs");
  if (f.has("top_logprobs")) {
    const int k = static_cast<int>(f.integer("top_logprobs", 0, kMaxTopLogprobs));
    if (!r.logprobs && k > 0)
      bad_request("'top_logprobs' requires 'logprobs' to be true", "top_logprobs");
    r.gen.sampling.top_logprobs = k;
  }
  r.gen.sampling.logprobs = r.logprobs;
  // Tools and schemas from the body with its key order (a JSON schema's properties come out in
  // the order given; nlohmann::json would sort them).
  const nlohmann::ordered_json in_order =
      ordered ? *ordered : nlohmann::ordered_json::parse(body.dump());
  r.tools = parse_tools_request(in_order);
  keep_schema_order(in_order, r.gen.constraint);
  if (r.tools.active() && r.gen.constraint.kind != OutputConstraint::Kind::none &&
      r.tools.choice != ToolsRequest::Choice::automatic)
    bad_request("'tool_choice' \"required\" or a named function cannot be combined with '" +
                    r.gen.constraint.field + "'",
                "tool_choice");
  return r;
}

ClassifyRequest parse_classify_request(const json& body) {
  require_object(body);
  Fields f(body);
  ClassifyRequest r;
  r.model = model_field(f);
  r.prompts = parse_prompts(body, "prompt");
  parse_sampling(f, r.opts.sampling);
  if (f.has("top_logprobs"))
    r.opts.top_logprobs = static_cast<int>(f.integer("top_logprobs", 0, kMaxTopLogprobs));
  if (f.has("return_logits")) r.opts.return_logits = f.boolean("return_logits");
  if (f.has("add_special_tokens")) r.opts.add_special_tokens = f.boolean("add_special_tokens");
  return r;
}

}  // namespace tessera::server
