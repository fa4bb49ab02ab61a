// Structured-output fields of a completions or chat body -> GenerateOptions::constraint:
// OpenAI's response_format ({"type": "text" | "json_object" | "json_schema", "json_schema":
// {"name", "schema", "strict"}}), vLLM's structured_outputs {json | regex | choice | grammar}
// and its older guided_json / guided_regex / guided_choice / guided_grammar, and llama.cpp
// server's grammar / json_schema. At most one may be given. The constraint's own errors (a bad
// schema or regex) come from Engine::prepare, as a 400 naming the field.
#pragma once

#include <nlohmann/json.hpp>

#include "tessera/engine.h"

namespace tessera::server {

// Throws ApiError (400) naming the field at fault.
void parse_output_constraint(const nlohmann::json& body, OutputConstraint& out);

// A json_schema constraint's text again from `body` parsed with its key order, so that the
// schema's properties are generated in the client's order (the JSON above sorts keys).
void keep_schema_order(const nlohmann::ordered_json& body, OutputConstraint& c);

}  // namespace tessera::server
