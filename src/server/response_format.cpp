#include "server/response_format.h"

#include "server/api_error.h"

namespace tessera::server {

using nlohmann::json;
using Kind = OutputConstraint::Kind;

namespace {

bool given(const json& body, const char* k) {
  auto it = body.find(k);
  return it != body.end() && !it->is_null();
}

std::string as_text(const json& v, const std::string& field, const char* want) {
  if (!v.is_string()) bad_request("'" + field + "' must be " + want, field);
  return v.get<std::string>();
}

// A schema given as an object (or a JSON string holding one, as some clients send it).
std::string schema_text(const json& v, const std::string& field) {
  if (v.is_object() || v.is_boolean()) return v.dump();
  if (v.is_string()) return v.get<std::string>();
  bad_request("'" + field + "' must be a JSON schema (an object)", field);
}

std::vector<std::string> choices(const json& v, const std::string& field) {
  if (!v.is_array() || v.empty())
    bad_request("'" + field + "' must be a non-empty list of strings", field);
  std::vector<std::string> out;
  for (const json& c : v) out.push_back(as_text(c, field, "a list of strings"));
  return out;
}

OutputConstraint response_format(const json& rf) {
  OutputConstraint c;
  c.field = "response_format";
  if (!rf.is_object()) bad_request("'response_format' must be an object", "response_format");
  if (!rf.contains("type") || !rf["type"].is_string())
    bad_request("'response_format.type' must be text, json_object or json_schema",
                "response_format.type");
  const std::string type = rf["type"].get<std::string>();
  if (type == "text") return c;
  if (type == "json_object") {
    c.kind = Kind::json_object;
    return c;
  }
  if (type != "json_schema")
    bad_request(
        "'response_format.type' must be text, json_object or json_schema (got '" + type + "')",
        "response_format.type");
  if (!rf.contains("json_schema") || !rf["json_schema"].is_object())
    bad_request("'response_format.json_schema' must be an object with a 'schema'",
                "response_format.json_schema");
  const json& js = rf["json_schema"];
  c.kind = Kind::json_schema;
  c.field = "response_format.json_schema.schema";
  // OpenAI's own default when no schema is given: any JSON object (the API requires one).
  if (!given(js, "schema")) {
    c.kind = Kind::json_object;
    return c;
  }
  c.text = schema_text(js["schema"], c.field);
  return c;
}

}  // namespace

void parse_output_constraint(const json& body, OutputConstraint& out) {
  std::vector<OutputConstraint> found;
  auto add = [&](Kind k, const std::string& field, std::string text,
                 std::vector<std::string> ch = {}) {
    OutputConstraint c;
    c.kind = k;
    c.field = field;
    c.text = std::move(text);
    c.choices = std::move(ch);
    found.push_back(std::move(c));
  };
  if (given(body, "response_format")) {
    OutputConstraint c = response_format(body["response_format"]);
    if (c.kind != Kind::none) found.push_back(std::move(c));
  }
  if (given(body, "structured_outputs")) {
    const json& so = body["structured_outputs"];
    if (!so.is_object())
      bad_request("'structured_outputs' must be an object", "structured_outputs");
    if (given(so, "json"))
      add(Kind::json_schema, "structured_outputs.json",
          schema_text(so["json"], "structured_outputs.json"));
    if (given(so, "regex"))
      add(Kind::regex, "structured_outputs.regex",
          as_text(so["regex"], "structured_outputs.regex", "a string"));
    if (given(so, "choice"))
      add(Kind::choice, "structured_outputs.choice", "",
          choices(so["choice"], "structured_outputs.choice"));
    if (given(so, "grammar"))
      add(Kind::grammar, "structured_outputs.grammar",
          as_text(so["grammar"], "structured_outputs.grammar", "a string"));
  }
  if (given(body, "guided_json"))
    add(Kind::json_schema, "guided_json", schema_text(body["guided_json"], "guided_json"));
  if (given(body, "json_schema"))
    add(Kind::json_schema, "json_schema", schema_text(body["json_schema"], "json_schema"));
  if (given(body, "guided_regex"))
    add(Kind::regex, "guided_regex", as_text(body["guided_regex"], "guided_regex", "a string"));
  if (given(body, "guided_choice"))
    add(Kind::choice, "guided_choice", "", choices(body["guided_choice"], "guided_choice"));
  for (const char* k : {"guided_grammar", "grammar"})
    if (given(body, k)) add(Kind::grammar, k, as_text(body[k], k, "a string (GBNF)"));
  if (found.size() > 1)
    bad_request("only one structured-output constraint may be given ('" + found[0].field +
                    "' and '" + found[1].field + "' both are)",
                found[1].field);
  if (!found.empty()) out = std::move(found[0]);
}

void keep_schema_order(const nlohmann::ordered_json& body, OutputConstraint& c) {
  if (c.kind != Kind::json_schema) return;
  const nlohmann::ordered_json* at = &body;
  size_t from = 0;
  for (;;) {  // c.field is the schema's path: "response_format.json_schema.schema", "guided_json"
    const size_t dot = c.field.find('.', from);
    const std::string key = c.field.substr(from, dot == std::string::npos ? dot : dot - from);
    if (!at->is_object() || !at->contains(key)) return;
    at = &(*at)[key];
    if (dot == std::string::npos) break;
    from = dot + 1;
  }
  if (at->is_object()) c.text = at->dump();
}

}  // namespace tessera::server
