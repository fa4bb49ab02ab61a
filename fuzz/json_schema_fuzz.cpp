// A JSON schema (grammar/json_schema.cpp), as response_format's json_schema, compiled and walked.
#include "grammar_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::fuzz::compile_constraint(tessera::OutputConstraint::Kind::json_schema, data, size);
  return 0;
}
