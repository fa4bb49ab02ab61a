// A regular expression (grammar/regex_parser.cpp), as response_format's regex, compiled and walked.
#include "grammar_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::fuzz::compile_constraint(tessera::OutputConstraint::Kind::regex, data, size);
  return 0;
}
