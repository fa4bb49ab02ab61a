#include "server/responses_request.h"

#include <cmath>
#include <limits>

#include "server/api_error.h"

namespace tessera::server {

using nlohmann::json;

namespace {

const char* kind(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  return "an unsupported value";
}

[[noreturn]] void wrong(const std::string& key, const char* want, const json& got) {
  bad_request("'" + key + "' must be " + want + ", not " + kind(got), key);
}

[[noreturn]] void unsupported(const std::string& key, const std::string& why) {
  bad_request("'" + key + "' " + why, key, "unsupported_parameter");
}

// Null counts as absent: the clients send explicit nulls for fields they leave unset.
const json* field(const json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

float real(const json& v, const char* key) {
  if (!v.is_number()) wrong(key, "a number", v);
  const double d = v.get<double>();
  if (std::fabs(d) > std::numeric_limits<float>::max())
    bad_request("'" + std::string(key) + "' is out of range", key);
  return static_cast<float>(d);
}

std::string part_text(const json& part, const std::string& param) {
  if (!part.is_object()) wrong(param, "an object", part);
  const json* type = field(part, "type");
  if (!type || !type->is_string()) bad_request("'" + param + ".type' must be a string", param);
  const std::string t = type->get<std::string>();
  // input_text in user / system turns, output_text in assistant turns (as the clients send
  // earlier replies back), plain "text" as chat's parts.
  if (t != "input_text" && t != "output_text" && t != "text")
    unsupported(param + ".type", "'" + t +
                                     "' is not supported by this server (only input_text and "
                                     "output_text parts)");
  const json* text = field(part, "text");
  if (!text || !text->is_string()) bad_request("'" + param + ".text' must be a string", param);
  return text->get<std::string>();
}

ChatMessage message_item(const json& item, const std::string& param) {
  if (!item.is_object()) wrong(param, "an object", item);
  if (const json* type = field(item, "type")) {
    if (!type->is_string()) wrong(param + ".type", "a string", *type);
    if (*type != "message")
      unsupported(param + ".type", "'" + type->get<std::string>() +
                                       "' is not supported by this server (only message items: "
                                       "no tool calls, no item references)");
  }
  const json* role = field(item, "role");
  if (!role || !role->is_string()) bad_request("'" + param + ".role' must be a string", param);
  std::string r = role->get<std::string>();
  if (r == "developer") r = "system";  // OpenAI's newer name for the system turn
  if (r != "system" && r != "user" && r != "assistant")
    bad_request(
        "'" + param + ".role' must be system, developer, user or assistant (got '" + r + "')",
        param + ".role");
  const json* content = field(item, "content");
  if (!content) bad_request("'" + param + ".content' is required", param + ".content");
  if (content->is_string()) return {r, content->get<std::string>()};
  if (!content->is_array()) wrong(param + ".content", "a string or a list of parts", *content);
  std::string text;
  for (size_t j = 0; j < content->size(); ++j)
    text += part_text((*content)[j], param + ".content[" + std::to_string(j) + "]");
  return {r, text};
}

void refuse_stateful_and_tools(const json& body) {
  if (const json* s = field(body, "store")) {
    if (!s->is_boolean()) wrong("store", "a boolean", *s);
    if (s->get<bool>())
      unsupported("store", "true is not supported: this server keeps no responses (send false)");
  }
  for (const char* k : {"previous_response_id", "conversation", "prompt"})
    if (field(body, k))
      unsupported(k,
                  "is not supported: this server keeps no responses or conversations; send "
                  "the whole conversation in 'input'");
  if (const json* b = field(body, "background"); b && b->is_boolean() && b->get<bool>())
    unsupported("background", "responses are not supported by this server");
  if (const json* t = field(body, "tools"); t && !(t->is_array() && t->empty()))
    unsupported("tools", "(tool calling) is not supported by this server");
  if (const json* tc = field(body, "tool_choice")) {
    if (!(tc->is_string() && (*tc == "none" || *tc == "auto")))
      unsupported("tool_choice",
                  "other than \"none\" or \"auto\" needs tools, which this server "
                  "does not support");
  }
  if (const json* r = field(body, "reasoning"); r && !(r->is_object() && r->empty()))
    unsupported("reasoning", "options are not supported by this server");
  if (const json* inc = field(body, "include"); inc && !(inc->is_array() && inc->empty()))
    unsupported("include", "is not supported by this server");
  if (const json* tr = field(body, "truncation"); tr && *tr != "disabled")
    unsupported("truncation",
                "other than \"disabled\" is not supported: a prompt that does not "
                "fit the context is refused");
}

// text.format, the Responses API's structured output: {"type": "text"}, {"type": "json_object"}
// or {"type": "json_schema", "name", "schema", "strict"?} (the schema in the format object
// itself, where chat's response_format nests it under json_schema) -> the same constraint.
OutputConstraint text_format(const json& body) {
  OutputConstraint c;
  const json* t = field(body, "text");
  if (!t) return c;
  if (!t->is_object()) wrong("text", "an object", *t);
  const json* f = field(*t, "format");
  if (!f) return c;
  if (!f->is_object()) wrong("text.format", "an object", *f);
  const json* type = field(*f, "type");
  if (!type || !type->is_string())
    bad_request("'text.format.type' must be text, json_object or json_schema", "text.format.type");
  if (*type == "text") return c;
  c.field = "text.format";
  if (*type == "json_object") {
    c.kind = OutputConstraint::Kind::json_object;
    return c;
  }
  if (*type != "json_schema")
    bad_request("'text.format.type' must be text, json_object or json_schema (got '" +
                    type->get<std::string>() + "')",
                "text.format.type");
  const json* schema = field(*f, "schema");
  if (!schema)
    bad_request("'text.format.schema' is required for json_schema", "text.format.schema");
  if (!schema->is_object() && !schema->is_boolean())
    wrong("text.format.schema", "a JSON schema (an object)", *schema);
  c.kind = OutputConstraint::Kind::json_schema;
  c.field = "text.format.schema";
  c.text = schema->dump();
  return c;
}

}  // namespace

ResponsesRequest parse_responses_request(const json& body) {
  if (!body.is_object())
    bad_request(std::string("the request body must be a JSON object, not ") + kind(body));
  refuse_stateful_and_tools(body);
  ResponsesRequest r;
  r.gen.constraint = text_format(body);
  if (const json* m = field(body, "model")) {
    if (!m->is_string()) wrong("model", "a string", *m);
    r.model = m->get<std::string>();
  }
  if (const json* ins = field(body, "instructions")) {
    if (!ins->is_string()) wrong("instructions", "a string", *ins);
    r.instructions = ins->get<std::string>();
    r.messages.push_back({"system", *r.instructions});
  }
  const json* input = field(body, "input");
  if (!input) bad_request("'input' is required", "input");
  if (input->is_string()) {
    r.messages.push_back({"user", input->get<std::string>()});
  } else if (input->is_array()) {
    if (input->empty()) bad_request("'input' must not be an empty list", "input");
    for (size_t i = 0; i < input->size(); ++i)
      r.messages.push_back(message_item((*input)[i], "input[" + std::to_string(i) + "]"));
  } else {
    wrong("input", "a string or a list of message items", *input);
  }
  if (const json* mt = field(body, "max_output_tokens")) {
    if (!mt->is_number_integer()) wrong("max_output_tokens", "an integer", *mt);
    const int64_t v = mt->get<int64_t>();
    if (v < 1 || v > std::numeric_limits<int32_t>::max())
      bad_request("'max_output_tokens' must be at least 1 (got " + std::to_string(v) + ")",
                  "max_output_tokens");
    r.gen.max_tokens = static_cast<int>(v);
    r.max_tokens_given = true;
  }
  // Ranges (temperature >= 0, top_p in (0, 1]) are the engine's to check, as for chat.
  if (const json* t = field(body, "temperature"))
    r.gen.sampling.temperature = real(*t, "temperature");
  if (const json* t = field(body, "top_p")) r.gen.sampling.top_p = real(*t, "top_p");
  if (const json* s = field(body, "stream")) {
    if (!s->is_boolean()) wrong("stream", "a boolean", *s);
    r.stream = s->get<bool>();
  }
  if (const json* so = field(body, "stream_options"); so && !r.stream)
    bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
  if (const json* md = field(body, "metadata")) {
    if (!md->is_object()) wrong("metadata", "an object", *md);
    r.metadata = *md;
  }
  if (const json* u = field(body, "user")) {
    if (!u->is_string()) wrong("user", "a string", *u);
    r.user = u->get<std::string>();
  }
  if (const json* ptc = field(body, "parallel_tool_calls"); ptc && !ptc->is_boolean())
    wrong("parallel_tool_calls", "a boolean", *ptc);
  return r;
}

}  // namespace tessera::server
