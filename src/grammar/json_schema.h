// JSON Schema (the subset OpenAI's strict structured outputs define) as a grammar of the JSON
// text that satisfies it, in the manner of llama.cpp's json-schema-to-grammar.cpp, with bounded
// whitespace and bounded numbers (docs/GRAMMAR.md says why and what is covered).
#pragma once

#include <string>

#include "grammar/expr.h"

namespace tessera::grammar {

// Throws Error(invalid_argument) naming the schema location at fault (e.g. "schema at
// /properties/age: unsupported keyword 'minimum'").
ExprGrammar json_schema_grammar(const std::string& schema_json);
// Any JSON object (response_format json_object).
ExprGrammar json_object_grammar();

}  // namespace tessera::grammar
